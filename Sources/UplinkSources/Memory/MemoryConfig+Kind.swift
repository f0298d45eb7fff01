import UplinkCore

/// `type: memory`: its name, documentation and example; `MountRootSensorConfig` (`MemoryConfig`) lists, decodes and
/// holds its keys.
public enum MemoryKind: ProcfsSensorKind {
    public static let typeName = "memory"

    public static let summary = """
        RAM and swap usage from `<proc_root>/meminfo`: `memory.total`, `memory.available`, `memory.used`,
        `memory.used_percent`, `memory.swap_total`, `memory.swap_free`, `memory.swap_used`.
        """

    public static let example = """
          # RAM and swap usage from <proc_root>/meminfo: memory.total, .available, .used, .used_percent, .swap_*.
          - name: memory
            type: memory
            interval: 2s          # time between samples (> 0). Default: 10s.
            jitter: 0s            # random delay after each aligned tick (< interval). Default: 0s.
            proc_root: /proc      # where procfs is mounted. Default: /proc.
        """
}
