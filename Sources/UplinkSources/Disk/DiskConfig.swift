import UplinkCore

/// Configuration of a `disk` source, which asks the kernel (`statvfs`) about file systems.
///
/// Every tick emits, per mount point (tag `mount_point`): `disk.total`, `disk.free` (available to unprivileged
/// users), `disk.used` in unit `bytes`, `disk.used_percent` (used / (used + free) × 100, as `df` computes it) in
/// unit `percent`, and `disk.inodes_total`, `disk.inodes_free`, `disk.inodes_used` in unit `count` (left out
/// for file systems without inodes, which report 0 total).
public struct DiskConfig: Sendable, Equatable {
    /// Time between two samples (YAML key `interval`, a duration). Default: 10 seconds.
    public var interval: Duration
    /// Largest random delay after each aligned tick (YAML key `jitter`). Default: 0 (none).
    public var jitter: Duration
    /// Tags added to every metric of the source (YAML key `tags`, a mapping of strings). Default: none.
    public var tags: [Tag]
    /// The mount points to report (YAML key `mount_points`, a list of paths). Default: `["/"]`.
    /// Any path inside a file system works; the tag carries the path as configured.
    public var mountPoints: [String]

    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], mountPoints: [String] = ["/"]) {
        self.interval = interval
        self.jitter = jitter
        self.tags = tags
        self.mountPoints = mountPoints
    }
}
