import UplinkConfig
import UplinkSources

/// `type: power` (see `PowerConfig`): the sensor keys (`interval`, `jitter`, `tags`), and
/// - `sys_root` (path): where sysfs is mounted; `<sys_root>/class/power_supply/*` is read. Default `/sys`.
extension SourceDecoding {
    static let powerKeys = sensorKeys + ["sys_root"]

    static func decodePower(_ mapping: ConfigMapping) -> PowerConfig {
        var config = PowerConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let sysRoot = mapping.string("sys_root") { config.sysRoot = sysRoot }
        return config
    }
}
