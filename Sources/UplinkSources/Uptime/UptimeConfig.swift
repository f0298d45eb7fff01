import UplinkCore

/// Configuration of an `uptime` source, which samples `<proc_root>/uptime`.
///
/// Every tick emits `uptime.seconds` (unit `seconds`): the time since the system booted.
public struct UptimeConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// Directory where procfs is mounted (YAML key `proc_root`, a path). Default: `"/proc"`.
    public var procRoot: String

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], procRoot: String = "/proc") {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.procRoot = procRoot
    }

    /// The file this configuration reads: `<procRoot>/uptime`.
    public var uptimePath: String { joinPath(procRoot, "uptime") }
}
