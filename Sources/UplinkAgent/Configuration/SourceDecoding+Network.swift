import UplinkConfig
import UplinkSources

/// `type: network` (see `NetworkConfig`): the sensor keys (`interval`, `jitter`, `tags`), and
/// - `proc_root` (path): where procfs is mounted; `<proc_root>/net/dev` is read. Default `/proc`.
/// - `include` (list of interface names, `*` and `?` wildcards): only these. Default: all.
/// - `exclude` (list, same patterns): never these. Default `[lo]`.
extension SourceDecoding {
    static let networkKeys = sensorKeys + ["proc_root", "include", "exclude"]

    static func decodeNetwork(_ mapping: ConfigMapping) -> NetworkConfig {
        var config = NetworkConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let procRoot = mapping.string("proc_root") { config.procRoot = procRoot }
        if let include = decodeStrings(mapping, "include") { config.include = include }
        if let exclude = decodeStrings(mapping, "exclude") { config.exclude = exclude }
        return config
    }
}
