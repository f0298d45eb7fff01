import Logging
import UplinkCore

/// One numeric sysfs attribute a sensor reports on every tick (`temp1_input`, `capacity`, …), with the metric
/// it becomes: `value = raw / divisor` (dividing, not multiplying by a
/// fraction, keeps `48312 / 1000` exactly `48.312`).
struct SysfsChannel: Sendable {
    var reader: NumericFileReader
    let metric: String
    let unit: String
    let divisor: Double
    /// The metric's own tags (the configured tags are added when emitting).
    let tags: [Tag]
    /// Whether the last read failed (the failure has been logged once).
    var failing = false

    init(path: String, metric: String, unit: String, divisor: Double, tags: [Tag]) {
        self.reader = NumericFileReader(path: path)
        self.metric = metric
        self.unit = unit
        self.divisor = divisor
        self.tags = tags
    }

    /// The channel, when its attribute can be read now; nil when it cannot (absent, or a sensor that is powered
    /// down or disabled). Sensors keep only the attributes that answer at start.
    init?(readableAt path: String, metric: String, unit: String, divisor: Double, tags: [Tag]) {
        self.init(path: path, metric: metric, unit: unit, divisor: divisor, tags: tags)
        guard reader.readInteger() != nil else { return nil }
    }

    /// Reads the attribute and returns the scaled value, or `nil` when it cannot be read. The first failure
    /// after a working read (or at start) is logged at notice level, later ones only at debug level: a sensor
    /// that is powered down fails on every read.
    mutating func read(logger: Logger, kind: String) -> Double? {
        guard let raw = reader.readInteger() else {
            if !failing {
                failing = true
                logger.notice("\(kind) source: cannot read a number from \(reader.path); skipping it while that lasts")
            } else {
                logger.debug("\(kind) source: cannot read a number from \(reader.path)")
            }
            return nil
        }
        failing = false
        return Double(raw) / divisor
    }
}
