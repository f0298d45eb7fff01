import UplinkConfig
import UplinkSources

/// `type: memory` (see `MemoryConfig`):
/// - `interval` (duration > 0): time between samples. Default `10s`.
/// - `jitter` (duration below the interval): random delay after each aligned tick. Default `0s`.
/// - `tags` (mapping of strings): added to every metric. Default none.
/// - `proc_root` (path): where procfs is mounted; `<proc_root>/meminfo` is read. Default `/proc`.
extension SourceDecoding {
    static let memoryKeys = ["interval", "jitter", "tags", "proc_root"]

    static func decodeMemory(_ mapping: ConfigMapping) -> MemoryConfig {
        var config = MemoryConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let procRoot = mapping.string("proc_root") { config.procRoot = procRoot }
        return config
    }
}
