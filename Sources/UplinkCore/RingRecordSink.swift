/// The agent's `RecordSink`: encodes each record into its wire frame (outside any lock) and appends the frame to
/// the circular buffer under the source's id.
public struct RingRecordSink: RecordSink {
    public let ring: RecordRing
    public let sourceID: SourceID
    public let encoder: any RecordFrameEncoder

    /// Registers `sourceName` with `ring` and returns a sink for it.
    public init(ring: RecordRing, sourceName: String, encoder: any RecordFrameEncoder) {
        self.ring = ring
        self.sourceID = ring.registerSource(sourceName)
        self.encoder = encoder
    }

    @discardableResult
    public func emit(_ record: Record) -> AppendOutcome {
        ring.append(encoder.frame(for: record), source: sourceID)
    }

    @discardableResult
    public func emitWaitingForSpace(_ record: Record) async -> AppendOutcome {
        await ring.appendWaitingForSpace(encoder.frame(for: record), source: sourceID)
    }

    @discardableResult
    public nonisolated(nonsending) func emitWaitingForSpace(_ batch: LogLineBatch) async -> [AppendOutcome] {
        let (frames, ends) = encoder.encodeLogFrames(batch)
        return await ring.appendWaitingForSpace(frames: frames, ends: ends, source: sourceID)
    }

    public func emitIfRoom(_ batch: LogLineBatch) -> [AppendOutcome]? {
        let (frames, ends) = encoder.encodeLogFrames(batch)
        return ring.appendIfRoom(frames: frames, ends: ends, source: sourceID)
    }

    public var acknowledgedSequence: UInt64 { ring.acknowledgedSequence }

    public func waitForAcknowledgement(after sequence: UInt64) async -> UInt64 {
        await ring.waitForAcknowledgement(after: sequence)
    }
}
