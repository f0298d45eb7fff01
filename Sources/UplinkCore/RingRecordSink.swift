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
        ring.append(encode(record), source: sourceID)
    }

    @discardableResult
    public func emitWaitingForSpace(_ record: Record) async -> AppendOutcome {
        await ring.appendWaitingForSpace(encode(record), source: sourceID)
    }

    @discardableResult
    public func emitWaitingForSpace(_ batch: LogLineBatch) async -> [AppendOutcome] {
        var frames: [UInt8] = []
        frames.reserveCapacity(batch.messageBytes.count + batch.count * (72 + batch.source.utf8.count))
        var ends: [Int] = []
        ends.reserveCapacity(batch.count)
        for index in 0..<batch.count {
            encoder.encodeLogFrame(batch, line: index, into: &frames)
            ends.append(frames.count)
        }
        return await ring.appendWaitingForSpace(frames: frames, ends: ends, source: sourceID)
    }

    public var acknowledgedSequence: UInt64 { ring.acknowledgedSequence }

    public func waitForAcknowledgement(after sequence: UInt64) async -> UInt64 {
        await ring.waitForAcknowledgement(after: sequence)
    }

    private func encode(_ record: Record) -> [UInt8] {
        var frame: [UInt8] = []
        frame.reserveCapacity(record.estimatedFrameBytes)
        encoder.encodeFrame(record, into: &frame)
        return frame
    }
}
