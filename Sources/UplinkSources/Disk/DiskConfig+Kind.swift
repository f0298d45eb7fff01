import UplinkConfig
import UplinkCore

/// `type: disk`: its keys, decoding, documentation and example.
extension DiskConfig {
    public static let typeName = "disk"

    public static var defaults: DiskConfig { DiskConfig() }

    public static let summary = """
        Space and inodes of file systems via `statvfs`, tag `mount_point`: `disk.total`, `disk.free` (available to
        unprivileged users), `disk.used` (`bytes`), `disk.used_percent` (used / (used + free) × 100, as `df` shows it) and
        `disk.inodes_total`, `disk.inodes_free`, `disk.inodes_used` (`count`; left out for file systems without inodes).
        """

    public static let keys = SensorSchedule.keys + [
        SourceKey(
            "mount_points", "non-empty list of paths", default: "`[/]`",
            "File systems to report (any path inside one). One that cannot be queried at start is left out with a warning."),
    ]

    public static let example = """
          # Space and inodes via statvfs: disk.total, .free, .used (bytes), .used_percent, .inodes_total/_free/_used.
          - name: disk
            type: disk
            interval: 1m
            mount_points: [/]     # file systems to report (any path inside one). Default: [/].
        """

    public mutating func decodeOwnKeys(_ mapping: ConfigMapping) {
        if let mountPoints = mapping.nonEmptyStrings(
            "mount_points", ifEmpty: "at least one mount point is required", hint: "e.g. 'mount_points: [/, /data]'")
        {
            self.mountPoints = mountPoints
        }
    }
}
