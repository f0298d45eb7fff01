import Logging

/// A producer of records: a sensor sampled on an interval, a log tailer, a test generator.
///
/// `run(context:)` is called once by the agent and returns when the task is cancelled (the agent's shutdown)
/// or when the source has nothing more to produce. Errors thrown from `run` are logged by the agent and stop
/// only this source.
public protocol Source: Sendable {
    /// The source's unique name within the agent, as configured (`sources[].name`).
    var name: String { get }
    /// Produces records into `context.sink` until cancelled.
    func run(context: SourceContext) async throws
}

/// What a running source is given by the agent.
public struct SourceContext: Sendable {
    /// Where the source delivers its records.
    public var sink: any RecordSink
    /// A logger labelled with the source's name.
    public var logger: Logger

    public init(sink: any RecordSink, logger: Logger) {
        self.sink = sink
        self.logger = logger
    }
}

/// Accepts records from one source.
///
/// The agent's implementation (`RingRecordSink`) encodes each record into a wire frame outside any lock and
/// appends it to the circular buffer; tests use a collecting implementation.
public protocol RecordSink: Sendable {
    /// Offers a record. Never blocks. When the buffer is full the overflow policy decides what is dropped;
    /// drops are counted, never silent.
    @discardableResult
    func emit(_ record: Record) -> AppendOutcome

    /// Offers a record, waiting while the buffer has no room for it instead of dropping anything.
    /// Sources whose data is durable elsewhere (a log file on disk, a benchmark generator) use this so that
    /// back-pressure reaches them. Returns `.rejectedOversize` only for a frame larger than the whole buffer.
    @discardableResult
    func emitWaitingForSpace(_ record: Record) async -> AppendOutcome
}

/// What happened to an appended frame.
public enum AppendOutcome: Sendable, Equatable {
    /// Stored under this sequence number.
    case appended(sequence: UInt64)
    /// Not stored: the buffer was full and the policy is `drop_newest`.
    case droppedNewest
    /// Not stored: the frame is larger than the whole buffer.
    case rejectedOversize
}
