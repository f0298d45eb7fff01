import UplinkCore

/// Configuration of an `uptime` source, which samples `<proc_root>/uptime`.
///
/// Every tick emits `uptime.seconds` (unit `seconds`): the time since the system booted.
public struct UptimeConfig: Sendable, Equatable {
    /// Time between two samples (YAML key `interval`, a duration). Default: 10 seconds.
    public var interval: Duration
    /// Largest random delay after each aligned tick (YAML key `jitter`). Default: 0 (none).
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

    /// The file this configuration reads: `<procRoot>/uptime`.
    public var uptimePath: String { joinPath(procRoot, "uptime") }
}
