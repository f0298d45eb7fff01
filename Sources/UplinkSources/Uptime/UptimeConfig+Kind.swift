import UplinkConfig
import UplinkCore

/// `type: uptime`: its keys, decoding, documentation and example.
extension UptimeConfig {
    public static let typeName = "uptime"

    public static var defaults: UptimeConfig { UptimeConfig() }

    public static let summary = """
        Seconds since boot from `<proc_root>/uptime`: `uptime.seconds` (unit `seconds`).
        """

    public static let keys = SensorSchedule.keys + [.procRoot()]

    public static let example = """
          # Seconds since boot from <proc_root>/uptime: uptime.seconds.
          - name: uptime
            type: uptime
            interval: 1m
            proc_root: /proc
        """

    public mutating func decodeOwnKeys(_ mapping: ConfigMapping) {
        if let procRoot = mapping.string("proc_root") { self.procRoot = procRoot }
    }
}
