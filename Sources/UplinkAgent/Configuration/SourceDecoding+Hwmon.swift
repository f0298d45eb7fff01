import UplinkConfig
import UplinkSources

/// `type: hwmon` (see `HwmonConfig`): the sensor keys (`interval`, `jitter`, `tags`), and
/// - `sys_root` (path): where sysfs is mounted; `<sys_root>/class/hwmon/hwmon*` is read. Default `/sys`.
extension SourceDecoding {
    static let hwmonKeys = sensorKeys + ["sys_root"]

    static func decodeHwmon(_ mapping: ConfigMapping) -> HwmonConfig {
        var config = HwmonConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let sysRoot = mapping.string("sys_root") { config.sysRoot = sysRoot }
        return config
    }
}
