import Logging
import SystemPackage
import UplinkCore

/// The one loop of every sensor: ticks on the sensor's `SensorSchedule` (aligned to the wall clock, with its jitter,
/// through an `IntervalTicker`) until the task is cancelled, and emits metrics with the configured tags.
///
/// Sensors use one of four forms: `run(_:)` calls a closure on every tick; `runReadingFile(_:missingHint:_:)` reads
/// one small file per tick (`/proc/stat`, `/proc/meminfo`, …), and `runReadingMetrics` one whose numbers are the
/// metrics (`/proc/loadavg`); `runReadingChannels(_:)` reads numeric sysfs attributes per tick (hwmon, thermal).
/// Cancellation ends each of them normally. A sensor with nothing to sample on this machine says so once with
/// `disable(_:metadata:)` and returns instead.
///
/// The type is public only because `PeriodicSensorConfig.sample(with:)` is handed one; what it does is internal.
public struct PeriodicSensorDriver {
    /// The source kind for messages, e.g. `cpu`.
    let kind: String
    let schedule: SensorSchedule
    let clock: any TickClock
    let logger: Logger
    /// Emits the source's metrics, adding the configured tags.
    let emitter: MetricEmitter
    /// Told when a sample fails or the sensor disables itself (a sample that emits tells it the sensor works).
    let health: SourceHealth

    /// A driver for the source `name` of the sensor kind `Config`.
    init<Config: PeriodicSensorConfig>(_ config: Config, source name: String, clock: any TickClock, context: SourceContext) {
        self.kind = Config.typeName
        self.schedule = config.schedule
        self.clock = clock
        self.logger = context.logger
        self.emitter = MetricEmitter(context: context, source: name, extraTags: config.schedule.tags)
        self.health = context.health
    }

    /// Why a procfs file may be missing, for the warning that disables a sensor reading one.
    static let procfsMissingHint = "no procfs here, e.g. a container without /proc, or a wrong proc_root?"

    /// Logs the one warning of a sensor that turns itself off at start, `<kind> source disabled: <reason>`; the
    /// caller then returns without sampling (the agent goes on without it).
    func disable(_ reason: String, metadata: Logger.Metadata? = nil) {
        health.failed("disabled: \(reason)")
        logger.warning("\(kind) source disabled: \(reason)", metadata: metadata)
    }

    /// Calls `body` on every tick until the task is cancelled.
    func run(_ body: () async -> Void) async {
        var ticker = IntervalTicker(interval: schedule.interval, jitter: schedule.jitter, clock: clock)
        while !Task.isCancelled {
            do {
                _ = try await ticker.nextTick()
            } catch {
                return  // cancelled
            }
            await body()
        }
    }

    /// Reads the file at `path` on every tick and hands its bytes to `onSample`.
    ///
    /// - At start the file is read once. If it cannot be read (it does not exist — a container without `/proc` — or
    ///   access is denied) ONE warning is logged and this returns: the sensor is disabled, not retried.
    /// - On every tick the file is read, the record timestamp is taken right after the read, and `onSample` parses
    ///   the bytes and emits records.
    /// - A read that fails later logs one warning when the failures start and one notice when reads work again;
    ///   ticks in between produce nothing.
    /// - Malformed lines reported by `onSample` are logged once as a warning, later occurrences at debug level.
    /// - Parameters:
    ///   - missingHint: Why the file might be missing, for the warning that disables the source.
    ///   - onSample: Called once per successful read with the file's bytes and the wall-clock time of the read
    ///     (nanoseconds since the epoch); returns the number of malformed lines it skipped.
    func runReadingFile(
        _ path: String, missingHint: String = procfsMissingHint,
        _ onSample: (UnsafeBufferPointer<UInt8>, _ timestamp: Int64) -> Int
    ) async {
        var reader = SmallFileReader(path: path)
        do {
            try reader.read()
        } catch {
            let reason =
                error.meansFileIsMissing
                ? "\(reader.pathString) does not exist (\(missingHint))"
                : "cannot read \(reader.pathString): \(error)"
            return disable(reason, metadata: ["path": "\(reader.pathString)", "errno": "\(error.rawValue)"])
        }
        var failing = false
        var warnedAboutMalformedLines = false
        await run {
            let timestamp: Int64
            do {
                try reader.read()
                timestamp = clock.nowNanoseconds()
            } catch {
                health.failed("cannot read \(reader.pathString): \(error)")
                if !failing {
                    failing = true
                    logger.warning(
                        "\(kind) source: cannot read \(reader.pathString): \(error); skipping samples until it can be read again",
                        metadata: ["path": "\(reader.pathString)"])
                }
                return
            }
            if failing {
                failing = false
                logger.notice("\(kind) source: \(reader.pathString) can be read again", metadata: ["path": "\(reader.pathString)"])
            }
            let malformed = reader.withContents { onSample($0, timestamp) }
            guard malformed > 0 else { return }
            let message: Logger.Message = "\(kind) source: skipped \(malformed) malformed line(s) in \(reader.pathString)"
            if warnedAboutMalformedLines {
                logger.debug(message, metadata: ["path": "\(reader.pathString)"])
            } else {
                warnedAboutMalformedLines = true
                logger.warning("\(message); later occurrences are logged at debug level", metadata: ["path": "\(reader.pathString)"])
            }
        }
    }

    /// Reads the file at `path` on every tick, as `runReadingFile` does, and emits the metrics `parse` makes of its
    /// bytes, timestamped right after the read. A file `parse` makes nothing of (`nil`) counts as one malformed line.
    func runReadingMetrics(
        _ path: String, missingHint: String = procfsMissingHint,
        _ parse: (UnsafeBufferPointer<UInt8>) -> [(name: String, value: Double, unit: String)]?
    ) async {
        await runReadingFile(path, missingHint: missingHint) { bytes, timestamp in
            guard let metrics = parse(bytes) else { return 1 }
            for metric in metrics {
                emitter.emit(metric.name, metric.value, unit: metric.unit, timestamp: timestamp)
            }
            return 0
        }
    }

    /// Reads the channels discovery found under `path` (`runReadingChannels(_:)`); when it found none, disables the
    /// sensor with `reason` instead, naming `path` in the warning's metadata.
    func runReadingChannels(_ channels: [SysfsChannel], path: String, noneFound reason: String) async {
        guard !channels.isEmpty else { return disable(reason, metadata: ["path": "\(path)"]) }
        await runReadingChannels(channels)
    }

    /// On every tick, reads each channel and emits its metric with the channel's tags followed by the configured
    /// ones (`readChannels`).
    func runReadingChannels(_ channels: [SysfsChannel]) async {
        var channels = channels
        let tags = channels.map { emitter.tags($0.tags) }
        await run {
            readChannels(&channels) { tags[$0] }
        }
    }

    /// Reads every channel once and emits its metric with the complete tag array `tags(index)` (the channel's own
    /// tags and the configured ones), timestamped right after its read. A channel that cannot be read is skipped
    /// (`SysfsChannel.read` logs it once).
    func readChannels(_ channels: inout [SysfsChannel], tags: (Int) -> [Tag]) {
        var readAny = false
        defer {
            if !readAny, let first = channels.first { health.failed("cannot read any of its \(channels.count) channels, e.g. \(first.metric)") }
        }
        for index in channels.indices {
            guard let value = channels[index].read(logger: logger, kind: kind) else { continue }
            readAny = true
            let channel = channels[index]
            emitter.emit(
                channel.metric, value, unit: channel.unit, tags: tags(index), tagsAreComplete: true,
                timestamp: clock.nowNanoseconds())
        }
    }
}
