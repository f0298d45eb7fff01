import UplinkCore

/// `type: load`: its name, documentation and example; `MountRootSensorConfig` (`LoadConfig`) lists, decodes and
/// holds its keys.
public enum LoadKind: ProcfsSensorKind {
    public static let typeName = "load"

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
