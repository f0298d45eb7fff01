import UplinkConfig
import UplinkSources

/// `type: thermal` (see `ThermalConfig`): the sensor keys (`interval`, `jitter`, `tags`), and
/// - `sys_root` (path): where sysfs is mounted; `<sys_root>/class/thermal/thermal_zone*` is read. Default `/sys`.
extension SourceDecoding {
    static let thermalKeys = sensorKeys + ["sys_root"]

    static func decodeThermal(_ mapping: ConfigMapping) -> ThermalConfig {
        var config = ThermalConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let sysRoot = mapping.string("sys_root") { config.sysRoot = sysRoot }
        return config
    }
}
