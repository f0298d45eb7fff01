import UplinkCore

/// Configuration of a `load` source, which samples `<proc_root>/loadavg`.
///
/// Every tick emits `load.1m`, `load.5m` and `load.15m` (the run-queue averages over 1, 5 and 15 minutes, no
/// unit), tagged only with the configured `tags`.
public struct LoadConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// Directory where procfs is mounted (YAML key `proc_root`, a path). Default: `"/proc"`.
    public var procRoot: String

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], procRoot: String = "/proc") {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.procRoot = procRoot
    }

    /// The file this configuration reads: `<procRoot>/loadavg`.
    public var loadavgPath: String { joinPath(procRoot, "loadavg") }
}
