import NIOCore
import UplinkWire

/// A hole in one stream's sequence numbers: records the agent dropped.
struct SequenceGap: Sendable, Equatable {
    /// The mark before the gap.
    var after: UInt64
    /// The first sequence received after it.
    var next: UInt64
    /// How many records are missing.
    var missing: UInt64 { next - after - 1 }
}

/// A line the collector could not take, for the rejects file.
struct RejectNote: Sendable {
    enum Kind: Sendable {
        /// Not a valid record or heartbeat line.
        case malformed(WireDecodingError, line: ByteBuffer)
        /// Longer than `maxLineBytes`: its length without the terminator.
        case tooLong(length: Int)
        /// The request ended in the middle of a line: the bytes of that partial line.
        case truncated(length: Int)
    }

    var stream: StreamKey
    var kind: Kind

    var isTooLong: Bool {
        if case .tooLong = kind { return true }
        return false
    }

    var code: String {
        switch kind {
        case .malformed(let error, _): error.code
        case .tooLong: "too_long"
        case .truncated: "truncated_line"
        }
    }
}

/// What one received chunk brought, sorted out but not yet stored.
struct ReceivedBatch: Sendable {
    /// Record lines to store, in increasing sequence order.
    var lines: [ByteBuffer] = []
    /// The stream's mark once `lines` are stored.
    var highestSequence: UInt64
    /// Whether the batch raises the stream's mark (it may do so without lines: see `resent`).
    var raisesMark = false
    /// Origins whose highest offset the batch raises: origin id → offset.
    var origins: [UInt64: UInt64] = [:]
    /// Records at or below the stream's mark.
    var duplicates: UInt64 = 0
    /// Records above the mark whose origin offset was stored before: lines an agent sent again after a restart.
    var resent: UInt64 = 0
    var heartbeats: UInt64 = 0
    var gaps: [SequenceGap] = []
    var rejects: [RejectNote] = []

    var missing: UInt64 { gaps.reduce(0) { $0 + $1.missing } }
    var tooLong: UInt64 { UInt64(rejects.count(where: \.isTooLong)) }
    var malformed: UInt64 { UInt64(rejects.count) - tooLong }
    var needsStorage: Bool { raisesMark || !rejects.isEmpty }
}

/// Sorts one stream's body into batches: lines split across chunks anywhere, each line scanned once, duplicates
/// (at or below the mark, or at or below their origin's offset) discarded, gaps measured, bad lines set aside.
/// Pure: no I/O.
struct StreamProcessor {
    let stream: StreamKey
    /// Highest sequence accepted so far (stored, or in a batch handed out for storing).
    private(set) var mark: UInt64
    /// The agent's origins: id → highest offset accepted so far.
    private(set) var originMarks: [UInt64: UInt64]
    private var splitter: LineSplitter

    init(stream: StreamKey, mark: UInt64, originMarks: [UInt64: UInt64] = [:], maxLineBytes: Int) {
        self.stream = stream
        self.mark = mark
        self.originMarks = originMarks
        self.splitter = LineSplitter(maxLineBytes: maxLineBytes)
    }

    /// Takes the next received chunk and returns what its complete lines hold.
    mutating func process(_ chunk: ByteBuffer) -> ReceivedBatch {
        splitter.append(chunk)
        var batch = ReceivedBatch(highestSequence: mark)
        while let piece = splitter.nextLine() {
            switch piece {
            case .tooLong(let length):
                batch.rejects.append(RejectNote(stream: stream, kind: .tooLong(length: length)))
            case .line(let line):
                do {
                    switch try WireLineParser.scan(line) {
                    case .heartbeat:
                        batch.heartbeats += 1
                    case .record(let sequence, let origin):
                        if sequence <= mark {
                            batch.duplicates += 1
                            continue
                        }
                        if sequence - mark > 1 { batch.gaps.append(SequenceGap(after: mark, next: sequence)) }
                        mark = sequence
                        batch.raisesMark = true
                        if let origin {
                            if let stored = originMarks[origin.id], origin.offset <= stored {
                                batch.resent += 1
                                continue
                            }
                            originMarks[origin.id] = origin.offset
                            batch.origins[origin.id] = origin.offset
                        }
                        batch.lines.append(line)
                    }
                } catch {
                    batch.rejects.append(RejectNote(stream: stream, kind: .malformed(error, line: line)))
                }
            }
        }
        batch.highestSequence = mark
        return batch
    }

    /// At the normal end of the request: a batch noting a cut-off last line, if there is one.
    mutating func finish() -> ReceivedBatch? {
        guard let length = splitter.finish() else { return nil }
        var batch = ReceivedBatch(highestSequence: mark)
        batch.rejects.append(RejectNote(stream: stream, kind: .truncated(length: length)))
        return batch
    }
}
