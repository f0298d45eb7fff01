import UplinkConfig
import UplinkSources

/// `type: disk` (see `DiskConfig`): the sensor keys (`interval`, `jitter`, `tags`), and
/// - `mount_points` (non-empty list of paths): the file systems to report. Default `[/]`.
extension SourceDecoding {
    static let diskKeys = sensorKeys + ["mount_points"]

    static func decodeDisk(_ mapping: ConfigMapping) -> DiskConfig {
        var config = DiskConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let mountPoints = decodeStrings(mapping, "mount_points") {
            if mountPoints.isEmpty, let node = mapping.value("mount_points") {
                mapping.decoder.report(
                    .invalidValue, at: node.mark, path: mapping.path("mount_points"), "at least one mount point is required",
                    hint: "e.g. 'mount_points: [/, /data]'")
            } else {
                config.mountPoints = mountPoints
            }
        }
        return config
    }
}
