import UplinkCore

/// The `load` source: the load averages from `<proc_root>/loadavg`.
///
/// On every tick (see `LoadConfig.interval`) it emits `load.1m`, `load.5m`, `load.15m` (no unit).
/// Without the file the source logs one warning and returns; a malformed file is skipped (logged once).
public typealias LoadSource = ConfiguredSource<LoadConfig>

extension LoadKind {
    /// Reads `config.loadavgPath` on every tick and emits its three averages.
    public static func sample(_ config: LoadConfig, with sensor: PeriodicSensorDriver) async {
        await sensor.runReadingMetrics(config.loadavgPath) { bytes in
            LoadSource.parse(bytes).map { load in
                [("load.1m", load.oneMinute, ""), ("load.5m", load.fiveMinutes, ""), ("load.15m", load.fifteenMinutes, "")]
            }
        }
    }
}
