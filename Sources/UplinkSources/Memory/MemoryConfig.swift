import UplinkCore

/// Configuration of a `memory` source, which samples `<proc_root>/meminfo`.
///
/// Every tick emits `memory.total`, `memory.available`, `memory.used` (total − available),
/// `memory.swap_total`, `memory.swap_free`, `memory.swap_used` in unit `bytes` and `memory.used_percent` in
/// unit `percent`, without tags.
public struct MemoryConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// Directory where procfs is mounted (YAML key `proc_root`, a path). Default: `"/proc"`.
    /// The source reads `<proc_root>/meminfo`.
    public var procRoot: String

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], procRoot: String = "/proc") {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.procRoot = procRoot
    }

    /// The file this configuration reads: `<procRoot>/meminfo`.
    public var meminfoPath: String {
        joinPath(procRoot, "meminfo")
    }
}
