import UplinkConfig
import UplinkSources

/// `type: memory` (see `MemoryConfig`):
/// - `interval` (duration > 0): time between samples. Default `10s`.
/// - `proc_root` (path): where procfs is mounted; `<proc_root>/meminfo` is read. Default `/proc`.
extension SourceDecoding {
    static let memoryKeys = ["interval", "proc_root"]

    static func decodeMemory(_ mapping: ConfigMapping) -> MemoryConfig {
        var config = MemoryConfig()
        if let interval = mapping.duration("interval", .greaterThan(.zero)) { config.interval = interval }
        if let procRoot = mapping.string("proc_root") { config.procRoot = procRoot }
        return config
    }
}
