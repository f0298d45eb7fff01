import UplinkCore

/// The `uptime` source: seconds since boot from `<proc_root>/uptime`, as `uptime.seconds` (unit `seconds`).
///
/// Without the file the source logs one warning and returns; a malformed file is skipped (logged once).
public typealias UptimeSource = ConfiguredSource<UptimeConfig>

extension UptimeKind {
    /// Reads `config.uptimePath` on every tick and emits the seconds since boot.
    public static func sample(_ config: UptimeConfig, with sensor: PeriodicSensorDriver) async {
        await sensor.runReadingMetrics(config.uptimePath) { bytes in
            UptimeSource.parse(bytes).map { [("uptime.seconds", $0, MetricUnit.seconds)] }
        }
    }
}
