import UplinkCore

// The one place that lists every source kind.
//
// A kind is one folder, `Sources/UplinkSources/<Kind>/`:
// - `<Kind>.swift`: the source (`struct <Kind>Source: Source`); a sensor runs its ticks through `PeriodicSensorDriver`;
// - `<Kind>Config.swift`: the configuration type with a `///` comment on every setting (YAML key, unit, default); a
//   sensor holds a `schedule: SensorSchedule` (`interval`, `jitter`, `tags`) and conforms to `PeriodicSensorConfig`;
// - `<Kind>Config+Kind.swift`: its conformance to `SourceKindConfig`: the `type:` name, the docs summary, the keys
//   (`SourceKey`: name, type, default, description), `decode` (the helpers in `ConfigMapping+SourceValues.swift` and
//   `SensorSchedule.decode` keep the shared error texts), `makeSource`, and its block for examples.yaml;
// - `<Kind>+<Concern>.swift` files for the rest (parsing, discovery, …).
// Then one line below names it, and
//     UPLINK_WRITE_GENERATED_DOCS=1 swift test --filter SourceKindDocumentationTests
// rewrites the generated parts of docs/configuration.md and examples.yaml (the test fails while they are stale, when
// the example does not decode, or when `decode` does not read a documented key). Nothing else changes: decoding,
// validation, live reload and `uplink status` work from this list.

extension SourceKind {
    /// Every kind of source the agent can run, in the order the "known types" hint and the docs list them.
    public static let allCases: [SourceKind] = [
        CPUConfig.kind,
        MemoryConfig.kind,
        GeneratorConfig.kind,
        LoadConfig.kind,
        UptimeConfig.kind,
        NetworkConfig.kind,
        DiskIOConfig.kind,
        DiskConfig.kind,
        ThermalConfig.kind,
        HwmonConfig.kind,
        PowerConfig.kind,
        SysfsConfig.kind,
        ExecConfig.kind,
        TailConfig.kind,
    ]
}

/// Builds the source a configuration describes.
/// - Parameters:
///   - name: The source's unique name within the agent (`sources[].name`).
///   - config: Its typed configuration.
///   - clock: The clock the sensors (every kind but the generator and the tailer) tick by; the real clock unless a
///     test injects one.
public func makeSource(name: String, config: SourceConfig, clock: any TickClock = SystemTickClock()) -> any Source {
    config.settings.makeSource(name: name, clock: clock)
}
