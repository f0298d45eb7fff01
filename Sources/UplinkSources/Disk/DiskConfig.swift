import UplinkCore

/// Configuration of a `disk` source, which asks the kernel (`statvfs`) about file systems.
///
/// Every tick emits, per mount point (tag `mount_point`): `disk.total`, `disk.free` (available to unprivileged
/// users), `disk.used` in unit `bytes`, `disk.used_percent` (used / (used + free) × 100, as `df` computes it) in
/// unit `percent`, and `disk.inodes_total`, `disk.inodes_free`, `disk.inodes_used` in unit `count` (left out
/// for file systems without inodes, which report 0 total).
public struct DiskConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// The mount points to report (YAML key `mount_points`, a list of paths). Default: `["/"]`.
    /// Any path inside a file system works; the tag carries the path as configured.
    public var mountPoints: [String]

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], mountPoints: [String] = ["/"]) {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.mountPoints = mountPoints
    }
}
