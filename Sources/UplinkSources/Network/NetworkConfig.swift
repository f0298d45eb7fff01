import UplinkCore

/// Configuration of a `network` source, which samples `<proc_root>/net/dev`.
///
/// Every tick emits, per interface (tag `interface`), the rates over the interval since the previous tick:
/// `network.rx_bytes`, `network.tx_bytes` (unit `bytes_per_second`) and `network.rx_packets`,
/// `network.tx_packets`, `network.rx_errors`, `network.tx_errors`, `network.rx_drops`, `network.tx_drops`
/// (unit `operations_per_second`). The first tick only primes the counters.
public struct NetworkConfig: Sendable, Equatable {
    /// Time between two samples (YAML key `interval`, a duration). Default: 10 seconds.
    public var interval: Duration
    /// Largest random delay after each aligned tick (YAML key `jitter`). Default: 0 (none).
    public var jitter: Duration
    /// Tags added to every metric of the source (YAML key `tags`, a mapping of strings). Default: none.
    public var tags: [Tag]
    /// Directory where procfs is mounted (YAML key `proc_root`, a path). Default: `"/proc"`.
    public var procRoot: String
    /// Interfaces to report (YAML key `include`, a list of names with `*` and `?` wildcards). Default: empty,
    /// meaning every interface.
    public var include: [String]
    /// Interfaces never reported, even when included (YAML key `exclude`, same patterns). Default: `["lo"]`.
    public var exclude: [String]

    public init(
        interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], procRoot: String = "/proc",
        include: [String] = [], exclude: [String] = ["lo"]
    ) {
        self.interval = interval
        self.jitter = jitter
        self.tags = tags
        self.procRoot = procRoot
        self.include = include
        self.exclude = exclude
    }

    /// The file this configuration reads: `<procRoot>/net/dev`.
    public var netDevPath: String { joinPath(procRoot, "net/dev") }
}
