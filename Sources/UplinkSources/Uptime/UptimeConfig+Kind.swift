import UplinkCore

/// `type: uptime`: its mount point key and setting, documentation and example; `MountRootSensorConfig` lists and
/// decodes its keys.
extension UptimeConfig: MountRootSensorConfig {
    public static let typeName = "uptime"

    public static var defaults: UptimeConfig { UptimeConfig() }

    public static let summary = """
        Seconds since boot from `<proc_root>/uptime`: `uptime.seconds` (unit `seconds`).
        """

    static var mountRoot: (key: SourceKey, setting: WritableKeyPath<UptimeConfig, String>) { (.procRoot(), \.procRoot) }

    public static let example = """
          # Seconds since boot from <proc_root>/uptime: uptime.seconds.
          - name: uptime
            type: uptime
            interval: 1m
            proc_root: /proc
        """
}
