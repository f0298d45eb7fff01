import Logging
import UplinkConfig
import UplinkCore

/// The running state of one log reader source (`tail`, `journald`): built when the source starts, then run until the
/// task is cancelled. Used only by the source's task.
protocol LogReaderEngine: AnyObject {
    associatedtype Config
    /// The engine of the source `name`; throws a `SourceError` when the source cannot start (nothing was read then).
    init(name: String, config: Config, context: SourceContext, clock: any TickClock) throws
    /// Reads until the task is cancelled, then stops (see `LogReaderStop`).
    func run() async
}

/// A log reader kind (`tail`, `journald`): its source is its engine, built at start and run until cancelled.
protocol LogReaderConfig: RunnableSourceKindConfig {
    associatedtype Engine: LogReaderEngine where Engine.Config == Self
}

extension LogReaderConfig {
    /// Builds the kind's engine (throwing a `SourceError` before anything is read when the source cannot start) and
    /// runs it until cancelled.
    public func run(source name: String, clock: any TickClock, context: SourceContext) async throws {
        try await Engine(name: name, config: self, context: context, clock: clock).run()
    }
}

/// How a log reader (`tail`, `journald`) begins to stop once it is cancelled: it gives the collector a moment to
/// acknowledge what it sent, so that the final checkpoint covers as much as it can.
enum LogReaderStop {
    /// The longest a log reader's stop waits for the acknowledgement of the last record it sent.
    static let acknowledgementWait: Duration = .seconds(5)

    /// Waits up to `acknowledgementWait` for `sink` to report `sequence`, the last record sent, acknowledged. When it
    /// is not, says at info level that the unacknowledged records are sent again on the next start (the collector
    /// discards the ones it already stored, by their origins).
    /// - Parameters:
    ///   - kind: The source kind for the message (`tail`).
    ///   - record: What the kind calls a record (`line`, `entry`).
    static func awaitAcknowledgement(
        of sequence: UInt64, from sink: any RecordSink, kind: String, record: String, logger: Logger
    ) async {
        if await !sink.waitForAcknowledgement(through: sequence, atMost: acknowledgementWait) {
            logger.info(
                "\(kind) source: stopping before the collector acknowledged every \(record) sent; they are sent again on the next start"
            )
        }
    }
}

/// The keys both log readers have: the longest record sent whole and how often the checkpoint is written, with the
/// range and default they share. Each kind says in its own words what they mean for its records.
extension SourceKey {
    /// `max_line_bytes`: a size from 1 B to 16 MiB, by default 64 KiB.
    static func maxLineBytes(_ description: String) -> SourceKey {
        SourceKey("max_line_bytes", "size, 1 B to `16MiB`", default: "`64KiB`", description)
    }

    /// `checkpoint_interval`: a duration > 0, by default 1 s.
    static func checkpointInterval(_ description: String) -> SourceKey {
        SourceKey("checkpoint_interval", "duration, > 0", default: "`1s`", description)
    }
}

extension ConfigMapping {
    /// Reads `max_line_bytes` of a log reader: nil when absent, or when out of range (reported).
    func maxLineBytes() -> Int? { size("max_line_bytes", .between(1, 16 << 20)) }

    /// Reads `checkpoint_interval` of a log reader: nil when absent, or when not positive (reported).
    func checkpointInterval() -> Duration? { duration("checkpoint_interval", .greaterThan(.zero)) }
}
