import Logging
import SystemPackage

/// The loop shared by sensors that sample one small file per tick (`/proc/stat`, `/proc/meminfo`, …).
///
/// - At start the file is read once. If it cannot be read (it does not exist — a container without `/proc` —
///   or access is denied) ONE warning is logged and `run` returns: the sensor is disabled, not retried.
/// - On every tick of an `IntervalTicker` the file is read, the record timestamp is taken right after the
///   read, and `onSample` parses the bytes and emits records.
/// - A read that fails later logs one warning when the failures start and one notice when reads work again;
///   ticks in between produce nothing.
/// - Malformed lines reported by `onSample` are logged once as a warning, later occurrences at debug level.
/// - Cancellation ends the loop normally.
struct FileSensorLoop {
    private(set) var reader: SmallFileReader
    private(set) var ticker: IntervalTicker
    let logger: Logger
    /// The source kind for messages, e.g. `cpu`.
    let kind: String
    /// Why the file might be missing, for the warning that disables the source.
    let missingHint: String

    private var failing = false
    private var warnedAboutMalformedLines = false

    init(path: String, interval: Duration, jitter: Duration = .zero, clock: any TickClock, logger: Logger, kind: String,
        missingHint: String = "no procfs here, e.g. a container without /proc, or a wrong proc_root?"
    ) {
        self.missingHint = missingHint
        self.reader = SmallFileReader(path: path)
        self.ticker = IntervalTicker(interval: interval, jitter: jitter, clock: clock)
        self.logger = logger
        self.kind = kind
    }

    /// Runs until the task is cancelled, or returns at once (after one warning) when the file is unreadable.
    /// - Parameter onSample: Called once per successful read with the file's bytes and the wall-clock time of
    ///   the read (nanoseconds since the epoch); returns the number of malformed lines it skipped.
    mutating func run(onSample: (UnsafeBufferPointer<UInt8>, _ timestamp: Int64) -> Int) async {
        guard probe() else { return }
        while !Task.isCancelled {
            do {
                _ = try await ticker.nextTick()
            } catch {
                return  // cancelled
            }
            let timestamp: Int64
            do {
                try reader.read()
                timestamp = ticker.clock.nowNanoseconds()
            } catch {
                if !failing {
                    failing = true
                    logger.warning(
                        "\(kind) source: cannot read \(reader.pathString): \(error); skipping samples until it can be read again",
                        metadata: ["path": "\(reader.pathString)"]
                    )
                }
                continue
            }
            if failing {
                failing = false
                logger.notice("\(kind) source: \(reader.pathString) can be read again", metadata: ["path": "\(reader.pathString)"])
            }
            let malformed = reader.withContents { onSample($0, timestamp) }
            if malformed > 0 {
                logMalformed(malformed)
            }
        }
    }

    /// Reads the file once; on failure logs the single warning that disables the source.
    private mutating func probe() -> Bool {
        do {
            try reader.read()
            return true
        } catch {
            let reason =
                error.meansFileIsMissing
                ? "\(reader.pathString) does not exist (\(missingHint))"
                : "cannot read \(reader.pathString): \(error)"
            logger.warning(
                "\(kind) source disabled: \(reason)",
                metadata: ["path": "\(reader.pathString)", "errno": "\(error.rawValue)"]
            )
            return false
        }
    }

    private mutating func logMalformed(_ count: Int) {
        let message: Logger.Message = "\(kind) source: skipped \(count) malformed line(s) in \(reader.pathString)"
        if warnedAboutMalformedLines {
            logger.debug(message, metadata: ["path": "\(reader.pathString)"])
        } else {
            warnedAboutMalformedLines = true
            logger.warning(
                "\(message); later occurrences are logged at debug level",
                metadata: ["path": "\(reader.pathString)"]
            )
        }
    }
}
