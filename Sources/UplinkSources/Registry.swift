import UplinkCore

// The one place that lists every source kind.
//
// A kind is one folder, `Sources/UplinkSources/<Kind>/`:
// - `<Kind>.swift`: the source (`public struct <Kind>Source: Source`); a sensor runs its ticks through
//   `PeriodicSensorDriver` (`run`, `runReadingFile` or `runReadingChannels`);
// - `<Kind>Config.swift`: the configuration type, a `///` comment on every setting (YAML key, unit, default). A sensor
//   holds `public var schedule: SensorSchedule` (`interval`, `jitter`, `tags`) and conforms to `PeriodicSensorConfig`;
//   any other kind (a log reader such as `tail`) conforms to `SourceKindConfig` directly;
// - `<Kind>Config+Kind.swift`: the rest of `SourceKindConfig`, e.g. for a log reader
//       extension JournaldConfig {
//           public static let typeName = "journald"
//           public static var defaults: JournaldConfig { JournaldConfig() }
//           public static let summary = """ Markdown for docs/configuration.md """
//           public static let keys = [SourceKey("units", "list of strings", default: "all", "Units to read."), …]
//           public static let example = """ its item of the `sources` list in examples.yaml, indented by 2 """
//           public static func decode(_ mapping: ConfigMapping) -> JournaldConfig { read every key of `keys` }
//           public func makeSource(name: String, clock: any TickClock) -> any Source { JournaldSource(…) }
//       }
//   (a sensor's `keys` start with `SensorSchedule.keys` and its `decode` with `config.schedule = .decode(mapping)`;
//   `ConfigMapping+SourceValues.swift` reads tags, string lists, metric names and units with the shared messages);
// - `<Kind>+<Concern>.swift` files for the rest (parsing, discovery, …).
// Then add one line below, and run
//     UPLINK_WRITE_GENERATED_DOCS=1 swift test --filter SourceKindDocumentationTests
// to write the kind's section into docs/configuration.md and its example into examples.yaml (without the variable the
// test fails while they are stale, when the example does not decode, or when `decode` does not read a documented
// key). Nothing else changes: UplinkAgent decodes, validates, reloads and reports every kind listed here.

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
        JournaldConfig.kind,
    ]
}

/// Builds the source a configuration describes.
/// - Parameters:
///   - name: The source's unique name within the agent (`sources[].name`).
///   - config: Its typed configuration.
///   - clock: The clock the sensors tick by and the tailer and journald time their timeouts on (the generator keeps
///     its own pace); the real clock unless a test injects one.
public func makeSource(name: String, config: SourceConfig, clock: any TickClock = SystemTickClock()) -> any Source {
    config.settings.makeSource(name: name, clock: clock)
}
