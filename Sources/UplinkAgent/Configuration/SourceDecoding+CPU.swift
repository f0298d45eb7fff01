import UplinkConfig
import UplinkSources

/// `type: cpu` (see `CPUConfig`):
/// - `interval` (duration > 0): time between samples. Default `10s`.
/// - `per_core` (bool): also report every core, not only the total. Default `true`.
/// - `proc_root` (path): where procfs is mounted; `<proc_root>/stat` is read. Default `/proc`.
extension SourceDecoding {
    static let cpuKeys = ["interval", "per_core", "proc_root"]

    static func decodeCPU(_ mapping: ConfigMapping) -> CPUConfig {
        var config = CPUConfig()
        if let interval = mapping.duration("interval", .greaterThan(.zero)) { config.interval = interval }
        if let perCore = mapping.bool("per_core") { config.perCore = perCore }
        if let procRoot = mapping.string("proc_root") { config.procRoot = procRoot }
        return config
    }
}
