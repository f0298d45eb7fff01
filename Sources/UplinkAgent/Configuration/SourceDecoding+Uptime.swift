import UplinkConfig
import UplinkSources

/// `type: uptime` (see `UptimeConfig`): the sensor keys, and
/// - `proc_root` (path): where procfs is mounted; `<proc_root>/uptime` is read. Default `/proc`.
extension SourceDecoding {
    static let uptimeKeys = sensorKeys + ["proc_root"]

    static func decodeUptime(_ mapping: ConfigMapping) -> UptimeConfig {
        var config = UptimeConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let procRoot = mapping.string("proc_root") { config.procRoot = procRoot }
        return config
    }
}
