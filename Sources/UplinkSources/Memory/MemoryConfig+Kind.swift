import UplinkCore

/// `type: memory`: its mount point key and setting, documentation and example; `MountRootSensorConfig` lists and
/// decodes its keys.
extension MemoryConfig: MountRootSensorConfig {
    public static let typeName = "memory"

    public static var defaults: MemoryConfig { MemoryConfig() }

    public static let summary = """
        RAM and swap usage from `<proc_root>/meminfo`: `memory.total`, `memory.available`, `memory.used`,
        `memory.used_percent`, `memory.swap_total`, `memory.swap_free`, `memory.swap_used`.
        """

    static var mountRoot: (key: SourceKey, setting: WritableKeyPath<MemoryConfig, String>) { (.procRoot(), \.procRoot) }

    public static let example = """
          # RAM and swap usage from <proc_root>/meminfo: memory.total, .available, .used, .used_percent, .swap_*.
          - name: memory
            type: memory
            interval: 2s          # time between samples (> 0). Default: 10s.
            jitter: 0s            # random delay after each aligned tick (< interval). Default: 0s.
            proc_root: /proc      # where procfs is mounted. Default: /proc.
        """
}
