import UplinkCore

// The one place that lists every source kind. Adding one: docs/architecture.md, "Adding a source kind".

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
