import UplinkCore

/// Configuration of a `load` source, which samples `<proc_root>/loadavg`.
///
/// Every tick emits `load.1m`, `load.5m` and `load.15m` (the run-queue averages over 1, 5 and 15 minutes, no
/// unit), tagged only with the configured `tags`.
public struct LoadConfig: Sendable, Equatable {
    /// Time between two samples (YAML key `interval`, a duration). Default: 10 seconds. Ticks are aligned to
    /// multiples of the interval on the wall clock.
    public var interval: Duration
    /// Largest random delay after each aligned tick (YAML key `jitter`, a duration below the interval).
    /// Default: 0 (none).
    public var jitter: Duration
    /// Tags added to every metric of the source (YAML key `tags`, a mapping of strings). Default: none.
    public var tags: [Tag]
    /// Directory where procfs is mounted (YAML key `proc_root`, a path). Default: `"/proc"`.
    public var procRoot: String

    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], procRoot: String = "/proc") {
        self.interval = interval
        self.jitter = jitter
        self.tags = tags
        self.procRoot = procRoot
    }

    /// The file this configuration reads: `<procRoot>/loadavg`.
    public var loadavgPath: String { joinPath(procRoot, "loadavg") }
}
