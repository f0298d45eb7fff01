import UplinkCore

/// The `sysfs` source: one numeric value read from `path` on every tick, emitted as `metric` = raw × `scale` +
/// `offset` in `unit`.
///
/// Without the file the source logs one warning and returns. A file whose content is not a number is skipped
/// for that tick (logged once as a malformed line).
public typealias SysfsSource = ConfiguredSource<SysfsConfig>

extension SysfsSource {
    /// `raw × scale + offset`.
    static func value(_ bytes: UnsafeBufferPointer<UInt8>, scale: Double, offset: Double) -> Double? {
        ByteParsing.parseDouble(bytes, ByteParsing.trimmed(bytes, 0..<bytes.count)).map { $0 * scale + offset }
    }
}

extension SysfsConfig {
    /// Reads `path` on every tick and emits its value, scaled and offset, as `metric`.
    public func sample(with sensor: PeriodicSensorDriver) async {
        await sensor.runReadingMetrics(path, missingHint: "no such sensor on this machine, or a wrong path?") { bytes in
            SysfsSource.value(bytes, scale: scale, offset: offset).map { [(metric, $0, unit)] }
        }
    }
}
