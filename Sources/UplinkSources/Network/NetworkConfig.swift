import UplinkCore

/// Configuration of a `network` source, which samples `<proc_root>/net/dev`.
///
/// Every tick emits, per interface (tag `interface`), the rates over the interval since the previous tick:
/// `network.rx_bytes`, `network.tx_bytes` (unit `bytes_per_second`) and `network.rx_packets`,
/// `network.tx_packets`, `network.rx_errors`, `network.tx_errors`, `network.rx_drops`, `network.tx_drops`
/// (unit `operations_per_second`). The first tick only primes the counters.
public struct NetworkConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// Directory where procfs is mounted (YAML key `proc_root`, a path). Default: `"/proc"`.
    public var procRoot: String
    /// Interfaces to report (YAML key `include`, a list of names with `*` and `?` wildcards). Default: empty,
    /// meaning every interface.
    public var include: [String]
    /// Interfaces never reported, even when included (YAML key `exclude`, same patterns). Default: `["lo"]`.
    public var exclude: [String]

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(
        interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], procRoot: String = "/proc",
        include: [String] = [], exclude: [String] = ["lo"]
    ) {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.procRoot = procRoot
        self.include = include
        self.exclude = exclude
    }

    /// The file this configuration reads: `<procRoot>/net/dev`.
    public var netDevPath: String { joinPath(procRoot, "net/dev") }
}
