import Synchronization

/// What one sink's forwarder did so far.
public struct SinkStatistics: Sendable, Equatable {
    /// The sink's `name`.
    public var name: String
    /// Records the store accepted.
    public var recordsForwarded: UInt64 = 0
    /// Batches the store accepted.
    public var batchesForwarded: UInt64 = 0
    /// Deliveries that failed and were retried (connection errors, timeouts, 5xx, 429).
    public var retries: UInt64 = 0
    /// Records the store refused for good (4xx), written to the dead-letter file.
    public var recordsDeadLettered: UInt64 = 0
    /// Records retention deleted before this sink had them (at most this many: a batch being delivered while its
    /// segment is deleted may still arrive).
    public var recordsLost: UInt64 = 0
    /// The log offset the sink has delivered up to (its cursor).
    public var cursor: Int64 = 0
}

final class SinkStatisticsRecorder: Sendable {
    private let state: Mutex<SinkStatistics>

    init(name: String) {
        state = Mutex(SinkStatistics(name: name))
    }

    func update(_ body: (inout SinkStatistics) -> Void) {
        state.withLock { body(&$0) }
    }

    var snapshot: SinkStatistics { state.withLock { $0 } }
}
