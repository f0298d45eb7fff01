import UplinkConfig
import UplinkSources

/// `type: cpu` (see `CPUConfig`):
/// - `interval` (duration > 0): time between samples. Default `10s`.
/// - `jitter` (duration below the interval): random delay after each aligned tick. Default `0s`.
/// - `tags` (mapping of strings): added to every metric. Default none.
/// - `per_core` (bool): also report every core, not only the total. Default `true`.
/// - `proc_root` (path): where procfs is mounted; `<proc_root>/stat` is read. Default `/proc`.
extension SourceDecoding {
    static let cpuKeys = ["interval", "jitter", "tags", "per_core", "proc_root"]

    static func decodeCPU(_ mapping: ConfigMapping) -> CPUConfig {
        var config = CPUConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let perCore = mapping.bool("per_core") { config.perCore = perCore }
        if let procRoot = mapping.string("proc_root") { config.procRoot = procRoot }
        return config
    }
}
