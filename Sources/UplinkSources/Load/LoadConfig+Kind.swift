import UplinkCore

/// `type: load`: its mount point key and setting, documentation and example; `MountRootSensorConfig` lists and
/// decodes its keys.
extension LoadConfig: MountRootSensorConfig {
    public static let typeName = "load"

    public static var defaults: LoadConfig { LoadConfig() }

    public static let summary = """
        Load averages from `<proc_root>/loadavg`: `load.1m`, `load.5m`, `load.15m` (no unit).
        """

    static var mountRoot: (key: SourceKey, setting: WritableKeyPath<LoadConfig, String>) { (.procRoot(), \.procRoot) }

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
