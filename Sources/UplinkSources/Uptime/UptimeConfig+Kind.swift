import UplinkCore

/// `type: uptime`: its documentation and example; its keys and their decoding are `ProcfsRootSensorConfig`'s.
extension UptimeConfig: ProcfsRootSensorConfig {
    public static let typeName = "uptime"

    public static var defaults: UptimeConfig { UptimeConfig() }

    public static let summary = """
        Seconds since boot from `<proc_root>/uptime`: `uptime.seconds` (unit `seconds`).
        """

    public static let example = """
          # Seconds since boot from <proc_root>/uptime: uptime.seconds.
          - name: uptime
            type: uptime
            interval: 1m
            proc_root: /proc
        """
}
