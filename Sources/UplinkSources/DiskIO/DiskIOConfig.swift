import UplinkCore

/// Configuration of a `diskio` source, which samples `<proc_root>/diskstats`.
///
/// Every tick emits, per block device (tag `device`), the rates over the interval since the previous tick:
/// `diskio.read_bytes`, `diskio.write_bytes` (unit `bytes_per_second`, sectors × 512) and `diskio.reads`,
/// `diskio.writes` (unit `operations_per_second`, completed requests). The first tick only primes the counters.
public struct DiskIOConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// Directory where procfs is mounted (YAML key `proc_root`, a path). Default: `"/proc"`.
    public var procRoot: String
    /// Devices to report (YAML key `devices`, a list of names with `*` and `?` wildcards, e.g. `[sda, nvme*]`).
    /// Default: empty, meaning every whole disk: partitions (`sda1`, `nvme0n1p2`, `mmcblk0p1`,
    /// `mmcblk0boot0`), loop devices and RAM disks (`loop*`, `ram*`) are left out.
    public var devices: [String]

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(
        interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], procRoot: String = "/proc",
        devices: [String] = []
    ) {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.procRoot = procRoot
        self.devices = devices
    }

    /// The file this configuration reads: `<procRoot>/diskstats`.
    public var diskstatsPath: String { joinPath(procRoot, "diskstats") }
}
