import UplinkCore

/// Configuration of a `cpu` source, which samples `<proc_root>/stat` and reports CPU time percentages.
///
/// Every tick emits, for the total (tag `cpu=total`) and, when `perCore` is on, for every online core
/// (tags `cpu=0`, `cpu=1`, …), the metrics `cpu.user`, `cpu.system`, `cpu.idle`, `cpu.iowait` and
/// `cpu.steal` in unit `percent`, computed over the interval since the previous tick. The first tick only
/// primes the counters.
public struct CPUConfig: Sendable, Equatable {
    /// Time between two samples (YAML key `interval`, a duration such as `10s`). Default: 10 seconds.
    /// Ticks are aligned to multiples of the interval on the wall clock (a 10 s interval samples at :00, :10,
    /// :20, …). Values below 1 ms are raised to 1 ms.
    public var interval: Duration

    /// Largest random delay after each aligned tick (YAML key `jitter`, a duration below the interval), so a fleet
    /// sampling on the same boundaries does not read in lockstep. Default: 0 (none).
    public var jitter: Duration

    /// Tags added to every metric of the source (YAML key `tags`, a mapping of strings). Default: none.
    public var tags: [Tag]

    /// Whether to report every core as well as the total (YAML key `per_core`, a boolean). Default: `true`.
    /// When `false`, only the `cpu=total` series is emitted.
    public var perCore: Bool

    /// Directory where procfs is mounted (YAML key `proc_root`, a path). Default: `"/proc"`.
    /// The source reads `<proc_root>/stat`; point it at the host's procfs mounted into a container
    /// (e.g. `/host/proc`) to observe the host.
    public var procRoot: String

    public init(
        interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], perCore: Bool = true,
        procRoot: String = "/proc"
    ) {
        self.interval = interval
        self.jitter = jitter
        self.tags = tags
        self.perCore = perCore
        self.procRoot = procRoot
    }

    /// The file this configuration reads: `<procRoot>/stat`.
    public var statPath: String {
        joinPath(procRoot, "stat")
    }
}
