import UplinkConfig
import UplinkCore

/// `type: cpu`: its keys, decoding, documentation and example.
extension CPUConfig {
    public static let typeName = "cpu"

    public static var defaults: CPUConfig { CPUConfig() }

    public static let summary = """
        CPU time percentages from `<proc_root>/stat`: `cpu.user`, `cpu.system`, `cpu.idle`, `cpu.iowait`, `cpu.steal`, for
        the total (tag `cpu=total`) and, with `per_core`, for every core.
        """

    public static let keys = SensorSchedule.keys + [
        SourceKey("per_core", "bool", default: "`true`", "Also report every core, not only the total."),
        .procRoot("Where procfs is mounted, e.g. `/host/proc` in a container observing its host."),
    ]

    public static let example = """
          # CPU time percentages from <proc_root>/stat: cpu.user, cpu.system, cpu.idle, cpu.iowait, cpu.steal.
          - name: cpu
            type: cpu
            interval: 2s          # time between samples (> 0). Default: 10s.
            jitter: 0s            # random delay after each aligned tick (< interval). Default: 0s.
            tags:                 # strings added to every metric of this source. Default: none.
              role: gateway
            per_core: true        # also report every core, not only the total. Default: true.
            proc_root: /proc      # where procfs is mounted (e.g. /host/proc in a container). Default: /proc.
        """

    public mutating func decodeOwnKeys(_ mapping: ConfigMapping) {
        if let perCore = mapping.bool("per_core") { self.perCore = perCore }
        if let procRoot = mapping.string("proc_root") { self.procRoot = procRoot }
    }
}
