import UplinkCore

/// Configuration of a `cpu` source, which samples `<proc_root>/stat` and reports CPU time percentages.
///
/// Every tick emits, for the total (tag `cpu=total`) and, when `perCore` is on, for every online core
/// (tags `cpu=0`, `cpu=1`, …), the metrics `cpu.user`, `cpu.system`, `cpu.idle`, `cpu.iowait` and
/// `cpu.steal` in unit `percent`, computed over the interval since the previous tick. The first tick only
/// primes the counters.
public struct CPUConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// Whether to report every core as well as the total (YAML key `per_core`, a boolean). Default: `true`.
    /// When `false`, only the `cpu=total` series is emitted.
    public var perCore: Bool

    /// Directory where procfs is mounted (YAML key `proc_root`, a path). Default: `"/proc"`.
    /// The source reads `<proc_root>/stat`; point it at the host's procfs mounted into a container
    /// (e.g. `/host/proc`) to observe the host.
    public var procRoot: String

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(
        interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], perCore: Bool = true,
        procRoot: String = "/proc"
    ) {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.perCore = perCore
        self.procRoot = procRoot
    }

    /// The file this configuration reads: `<procRoot>/stat`.
    public var statPath: String {
        joinPath(procRoot, "stat")
    }
}
