import UplinkConfig
import UplinkSources

/// `type: load` (see `LoadConfig`): the sensor keys, and
/// - `proc_root` (path): where procfs is mounted; `<proc_root>/loadavg` is read. Default `/proc`.
extension SourceDecoding {
    static let loadKeys = sensorKeys + ["proc_root"]

    static func decodeLoad(_ mapping: ConfigMapping) -> LoadConfig {
        var config = LoadConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let procRoot = mapping.string("proc_root") { config.procRoot = procRoot }
        return config
    }
}
