import Logging
import NIOCore

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
    /// The directory where a source keeps state across restarts (`agent.state_dir`, e.g. the log tailer's
    /// checkpoints). The agent creates it before sources start; nil when the source runs without one (tests).
    public var stateDirectory: String?
    /// `uplink.linger`: how long a source that reads as data arrives may hold what arrived so that it reads and
    /// hands it on in one pass. Zero (the default): hand every arrival on at once.
    public var linger: Duration
    /// Where the source reports whether it works (`SourceHealth` says what each kind reports).
    public var health: SourceHealth
    /// The send path's event loop (`Agent.eventLoop`: the uplink's connection lives there). A source that waits for
    /// descriptors (the tailer's inotify) reads them as channels on it, so the wake-up for a line comes from the
    /// thread that sends it. nil (tests, tools): the source takes a loop of NIO's singleton group.
    public var eventLoop: (any EventLoop)?

    /// A context delivering to `sink`, logging to `logger`, with state kept in `stateDirectory` (none: in memory),
    /// reading within the latency budget `linger`, reporting to `health`, watching descriptors on `eventLoop`.
    public init(
        sink: any RecordSink, logger: Logger, stateDirectory: String? = nil, linger: Duration = .zero,
        health: SourceHealth = SourceHealth(), eventLoop: (any EventLoop)? = nil
    ) {
        self.sink = sink
        self.logger = logger
        self.stateDirectory = stateDirectory
        self.linger = linger
        self.health = health
        self.eventLoop = eventLoop
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

    /// Offers every line of `batch`, in order, waiting while the buffer has no room instead of dropping anything
    /// (as `emitWaitingForSpace` does for one record). Returns one outcome per line. Cancellation ends the wait:
    /// the lines not yet stored come back as `.droppedNewest`.
    nonisolated(nonsending) func emitWaitingForSpace(_ batch: LogLineBatch) async -> [AppendOutcome]

    /// Offers every line of `batch` only if all of them can be stored now without waiting (and without dropping):
    /// then one outcome per line, as `emitWaitingForSpace(_:)-(LogLineBatch)` returns; nil when any would have to
    /// wait, and then nothing was stored. For a source reading on an event loop, which must not wait there; it falls
    /// back to `emitWaitingForSpace` in a task.
    func emitIfRoom(_ batch: LogLineBatch) -> [AppendOutcome]?

    /// The highest sequence number (as returned in `AppendOutcome.appended`) that is acknowledged: the collector
    /// has stored every record up to it. A source that checkpoints its input (the log tailer) may forget data
    /// only up to here.
    var acknowledgedSequence: UInt64 { get }

    /// Waits until `acknowledgedSequence` is above `sequence` and returns it. Returns at once when it already
    /// is; cancellation ends the wait and returns the current value.
    func waitForAcknowledgement(after sequence: UInt64) async -> UInt64
}

extension RecordSink {
    /// One record per line through `emitWaitingForSpace(_:)-(Record)`; the agent's sink encodes the whole batch
    /// and appends it under one lock instead.
    public nonisolated(nonsending) func emitWaitingForSpace(_ batch: LogLineBatch) async -> [AppendOutcome] {
        var outcomes: [AppendOutcome] = []
        outcomes.reserveCapacity(batch.count)
        for index in 0..<batch.count {
            outcomes.append(await emitWaitingForSpace(batch.record(at: index)))
        }
        return outcomes
    }

    /// For a sink that can only store records one at a time: never without waiting, so callers always take
    /// `emitWaitingForSpace`.
    public func emitIfRoom(_ batch: LogLineBatch) -> [AppendOutcome]? { nil }

    /// For a sink with nothing downstream to acknowledge (tests, local collection): a record counts as
    /// acknowledged once emitted.
    public var acknowledgedSequence: UInt64 { .max }

    /// For a source that stops: waits at most `limit` until everything through `sequence` is acknowledged, so that its
    /// last checkpoint covers what it sent. Whether it was. Runs even when the calling task is already cancelled (the
    /// usual case at shutdown): the wait and its timer run in tasks of their own.
    public func waitForAcknowledgement(through sequence: UInt64, atMost limit: Duration) async -> Bool {
        guard sequence > 0, acknowledgedSequence < sequence else { return true }
        let waiter = Task { await self.waitForAcknowledgement(after: sequence - 1) }
        let timer = Task {
            try? await Task.sleep(for: limit)
            waiter.cancel()
        }
        let acknowledged = await waiter.value
        timer.cancel()
        return acknowledged >= sequence
    }

    /// See `acknowledgedSequence`: returns `UInt64.max` at once, or, when called with it, waits for cancellation.
    public func waitForAcknowledgement(after sequence: UInt64) async -> UInt64 {
        if sequence < .max { return .max }
        // Nothing can ever be acknowledged beyond the maximum: wait until the caller gives up (a latch nobody opens).
        _ = try? await AsyncLatch<Void>().waitUnlessCancelled()
        return .max
    }
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
