import UplinkConfig
import UplinkSources

/// `type: diskio` (see `DiskIOConfig`): the sensor keys (`interval`, `jitter`, `tags`), and
/// - `proc_root` (path): where procfs is mounted; `<proc_root>/diskstats` is read. Default `/proc`.
/// - `devices` (list of device names, `*` and `?` wildcards): only these. Default: every whole disk.
extension SourceDecoding {
    static let diskioKeys = sensorKeys + ["proc_root", "devices"]

    static func decodeDiskIO(_ mapping: ConfigMapping) -> DiskIOConfig {
        var config = DiskIOConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let procRoot = mapping.string("proc_root") { config.procRoot = procRoot }
        if let devices = decodeStrings(mapping, "devices") { config.devices = devices }
        return config
    }
}
