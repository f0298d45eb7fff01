import UplinkCore

/// `type: uptime`: its name, documentation and example; `MountRootSensorConfig` (`UptimeConfig`) lists, decodes and
/// holds its keys.
public enum UptimeKind: ProcfsSensorKind {
    public static let typeName = "uptime"

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
