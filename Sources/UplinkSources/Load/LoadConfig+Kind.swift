import UplinkCore

/// `type: load`: its documentation and example; its keys and their decoding are `ProcfsRootSensorConfig`'s.
extension LoadConfig: ProcfsRootSensorConfig {
    public static let typeName = "load"

    public static var defaults: LoadConfig { LoadConfig() }

    public static let summary = """
        Load averages from `<proc_root>/loadavg`: `load.1m`, `load.5m`, `load.15m` (no unit).
        """

    public static let example = """
          # Load averages from <proc_root>/loadavg: load.1m, load.5m, load.15m (no unit).
          - name: load
            type: load
            interval: 10s         # time between samples (> 0). Default: 10s.
            jitter: 0s            # largest random delay after each aligned tick (< interval). Default: 0s.
            tags: { role: gateway }  # added to every metric of this source. Default: none.
            proc_root: /proc      # where procfs is mounted. Default: /proc.
        """
}
