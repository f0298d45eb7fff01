import NIOCore

/// One connection's records accepted from one received chunk, as the storage thread writes them to the log.
public struct CollectorBatch: Sendable {
    /// Whose records these are.
    public var stream: StreamKey
    /// The received body lines, in increasing sequence order.
    public var lines: RecordLines
    /// The stream's mark once the batch is stored: the sequence of the last line, or higher when records after
    /// it were recognised as sent before (see `origins`). A batch may have no lines and only raise the mark.
    public var highestSequence: UInt64
    /// Origins (docs/protocol.md) whose highest offset the batch raises: origin id → offset.
    public var origins: [UInt64: UInt64]

    /// Creates a batch; `lines` must be in increasing sequence order, the last at most `highestSequence`.
    public init(stream: StreamKey, lines: RecordLines, highestSequence: UInt64, origins: [UInt64: UInt64] = [:]) {
        self.stream = stream
        self.lines = lines
        self.highestSequence = highestSequence
        self.origins = origins
    }
}
