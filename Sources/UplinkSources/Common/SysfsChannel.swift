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

/// Calls `body` on every tick of an aligned ticker until the task is cancelled.
func forEachTick(interval: Duration, jitter: Duration, clock: any TickClock, _ body: () -> Void) async {
    var ticker = IntervalTicker(interval: interval, jitter: jitter, clock: clock)
    while !Task.isCancelled {
        do {
            _ = try await ticker.nextTick()
        } catch {
            return
        }
        body()
    }
}

/// The sampling loop of the channel-based sensors (hwmon, thermal): on every tick, reads each channel and emits its
/// metric with the channel's tags followed by the configured ones. A channel that fails to read is skipped (and
/// logged once by `SysfsChannel.read`).
func sampleChannels(
    _ channels: [SysfsChannel], kind: String, source: String, extraTags: [Tag], interval: Duration, jitter: Duration,
    clock: any TickClock, context: SourceContext
) async {
    var channels = channels
    let emitter = MetricEmitter(context: context, source: source, extraTags: extraTags)
    let tags = channels.map { emitter.tags($0.tags) }
    let logger = context.logger
    await forEachTick(interval: interval, jitter: jitter, clock: clock) {
        for index in channels.indices {
            guard let value = channels[index].read(logger: logger, kind: kind) else { continue }
            let channel = channels[index]
            emitter.emit(
                channel.metric, value, unit: channel.unit, tags: tags[index], tagsAreComplete: true,
                timestamp: clock.nowNanoseconds())
        }
    }
}
