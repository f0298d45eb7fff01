import UplinkCore

/// Configuration of a `diskio` source, which samples `<proc_root>/diskstats`.
///
/// Every tick emits, per block device (tag `device`), the rates over the interval since the previous tick:
/// `diskio.read_bytes`, `diskio.write_bytes` (unit `bytes_per_second`, sectors × 512) and `diskio.reads`,
/// `diskio.writes` (unit `operations_per_second`, completed requests). The first tick only primes the counters.
public struct DiskIOConfig: Sendable, Equatable {
    /// Time between two samples (YAML key `interval`, a duration). Default: 10 seconds.
    public var interval: Duration
    /// Largest random delay after each aligned tick (YAML key `jitter`). Default: 0 (none).
    public var jitter: Duration
    /// Tags added to every metric of the source (YAML key `tags`, a mapping of strings). Default: none.
    public var tags: [Tag]
    /// Directory where procfs is mounted (YAML key `proc_root`, a path). Default: `"/proc"`.
    public var procRoot: String
    /// Devices to report (YAML key `devices`, a list of names with `*` and `?` wildcards, e.g. `[sda, nvme*]`).
    /// Default: empty, meaning every whole disk: partitions (`sda1`, `nvme0n1p2`, `mmcblk0p1`,
    /// `mmcblk0boot0`), loop devices and RAM disks (`loop*`, `ram*`) are left out.
    public var devices: [String]

    public init(
        interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], procRoot: String = "/proc",
        devices: [String] = []
    ) {
        self.interval = interval
        self.jitter = jitter
        self.tags = tags
        self.procRoot = procRoot
        self.devices = devices
    }

    /// The file this configuration reads: `<procRoot>/diskstats`.
    public var diskstatsPath: String { joinPath(procRoot, "diskstats") }
}
