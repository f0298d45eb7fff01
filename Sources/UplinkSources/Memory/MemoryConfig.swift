import UplinkCore

/// Configuration of a `memory` source, which samples `<proc_root>/meminfo`.
///
/// Every tick emits `memory.total`, `memory.available`, `memory.used` (total − available),
/// `memory.swap_total`, `memory.swap_free`, `memory.swap_used` in unit `bytes` and `memory.used_percent` in
/// unit `percent`, without tags.
public struct MemoryConfig: Sendable, Equatable {
    /// Time between two samples (YAML key `interval`, a duration such as `10s`). Default: 10 seconds.
    /// Ticks are aligned to multiples of the interval on the wall clock. Values below 1 ms are raised to 1 ms.
    public var interval: Duration

    /// Largest random delay after each aligned tick (YAML key `jitter`, a duration below the interval), so a fleet
    /// sampling on the same boundaries does not read in lockstep. Default: 0 (none).
    public var jitter: Duration

    /// Tags added to every metric of the source (YAML key `tags`, a mapping of strings). Default: none.
    public var tags: [Tag]

    /// Directory where procfs is mounted (YAML key `proc_root`, a path). Default: `"/proc"`.
    /// The source reads `<proc_root>/meminfo`.
    public var procRoot: String

    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], procRoot: String = "/proc") {
        self.interval = interval
        self.jitter = jitter
        self.tags = tags
        self.procRoot = procRoot
    }

    /// The file this configuration reads: `<procRoot>/meminfo`.
    public var meminfoPath: String {
        joinPath(procRoot, "meminfo")
    }
}
