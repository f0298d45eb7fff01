import NIOCore
import UplinkCore
import UplinkWire

/// A hole in one stream's sequence numbers: records the agent dropped.
struct SequenceGap: Sendable, Equatable {
    /// The mark before the gap.
    var after: UInt64
    /// The first sequence received after it.
    var next: UInt64
    /// How many records are missing (`next > after + 1` for every gap the processor notes).
    package var missing: UInt64 { next &- after &- 1 }
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
package struct ReceivedBatch: Sendable {
    /// Record lines to store, in increasing sequence order.
    package var lines = RecordLines()
    /// The stream's mark once `lines` are stored.
    package var highestSequence: UInt64
    /// The `ts` of the last line of `lines` (nil without lines): the fleet table's newest record time.
    package var newestRecordTime: Int64?
    /// Whether the batch raises the stream's mark (it may do so without lines: see `resent`).
    var raisesMark = false
    /// Origins whose highest offset the batch raises: origin id → offset.
    var origins: [UInt64: UInt64] = [:]
    /// Records at or below the stream's mark.
    package var duplicates: UInt64 = 0
    /// Records above the mark whose origin offset was stored before: lines an agent sent again after a restart.
    package var resent: UInt64 = 0
    package var heartbeats: UInt64 = 0
    /// `config_status` lines: an agent's remote configuration status, recorded, not stored.
    var configStatuses: [ConfigStatus] = []
    var gaps: [SequenceGap] = []
    /// How many gaps `gaps` holds.
    package var gapCount: Int { gaps.count }
    /// Rejected lines kept for the rejects file: the first `maximumRejectNotes` of the batch. The rest are only
    /// counted (`malformed`, `tooLong`): a peer sending nothing but bad lines, a megabyte of newlines, or a
    /// compressed body that expands to millions of them must not turn each into a line on disk.
    var rejects: [RejectNote] = []
    /// Lines longer than the limit, and other lines that are not records, heartbeats or acks: all of them, also
    /// those beyond `maximumRejectNotes`.
    package var tooLong: UInt64 = 0
    package var malformed: UInt64 = 0
    /// Most rejected lines of one batch written to the rejects file.
    static let maximumRejectNotes = 100

    /// Counts a rejected line, and keeps its note while the batch has room for notes.
    mutating func reject(_ note: RejectNote) {
        if note.isTooLong { tooLong += 1 } else { malformed += 1 }
        if rejects.count < Self.maximumRejectNotes { rejects.append(note) }
    }

    /// Records missing in `gaps`, saturating: two gaps of an agent sending sequences near the top of the range
    /// add up to more than a `UInt64`.
    package var missing: UInt64 {
        gaps.reduce(into: 0) { $0.addSaturating($1.missing) }
    }
    var needsStorage: Bool { raisesMark || !rejects.isEmpty }
}

/// Sorts one stream's body into batches: lines split across chunks anywhere, each line scanned once, duplicates
/// (at or below the mark, or at or below their origin's offset) discarded, gaps measured, bad lines set aside.
/// Pure: no I/O. (`package`: the ingest benchmark drives it.)
///
/// A chunk's whole lines are read in place, in one pass over its bytes; consecutive accepted lines are kept as one
/// slice of the chunk. Only a line cut by a chunk boundary goes through the `LineSplitter`, which joins it.
package struct StreamProcessor {
    let stream: StreamKey
    /// Highest sequence accepted so far (stored, or in a batch handed out for storing).
    private(set) var mark: UInt64
    /// The agent's origins: id → highest offset accepted so far.
    private(set) var originMarks: [UInt64: UInt64]
    private var splitter: LineSplitter
    /// The origin of the latest accepted line and its offset, not yet written to `originMarks` and the batch: a
    /// file's lines come in long runs, so most lines need no dictionary lookup. 0: none (origin ids start at 1).
    private var recentOriginID: UInt64 = 0
    private var recentOriginOffset: UInt64 = 0

    package init(stream: StreamKey, mark: UInt64, originMarks: [UInt64: UInt64] = [:], maxLineBytes: Int) {
        self.stream = stream
        self.mark = mark
        self.originMarks = originMarks
        self.splitter = LineSplitter(maxLineBytes: maxLineBytes)
    }

    /// Takes the next received chunk and returns what its complete lines hold.
    package mutating func process(_ chunk: ByteBuffer) -> ReceivedBatch {
        var batch = ReceivedBatch(highestSequence: mark)
        var chunk = chunk
        if splitter.isMidLine {
            // The chunk's first line ends one begun in earlier chunks: the splitter joins (or discards) it.
            guard let newline = Self.firstNewline(in: chunk) else {
                splitter.append(chunk)
                takeSplitterPieces(into: &batch)
                settleRecentOrigin(into: &batch)
                batch.highestSequence = mark
                return batch
            }
            splitter.append(chunk.readSlice(length: newline + 1)!)
            takeSplitterPieces(into: &batch)
        }
        let consumed = chunk.withUnsafeReadableBytes { bytes in
            takeWholeLines(bytes, of: chunk, into: &batch)
        }
        chunk.moveReaderIndex(forwardBy: consumed)
        if chunk.readableBytes > 0 {
            // The start of a line whose newline comes in a later chunk.
            splitter.append(chunk)
            takeSplitterPieces(into: &batch)
        }
        settleRecentOrigin(into: &batch)
        batch.highestSequence = mark
        return batch
    }

    /// Writes the recent origin's offset to `originMarks` and to the batch's raised origins.
    private mutating func settleRecentOrigin(into batch: inout ReceivedBatch) {
        guard recentOriginID != 0 else { return }
        originMarks[recentOriginID] = recentOriginOffset
        batch.origins[recentOriginID] = recentOriginOffset
        recentOriginID = 0
    }

    /// At the normal end of the request: a batch noting a cut-off last line, if there is one.
    package mutating func finish() -> ReceivedBatch? {
        guard let length = splitter.finish() else { return nil }
        var batch = ReceivedBatch(highestSequence: mark)
        batch.reject(RejectNote(stream: stream, kind: .truncated(length: length)))
        return batch
    }

    /// Sorts the `\n`-terminated lines of `bytes` (the readable bytes of `chunk`) into `batch`; returns how many
    /// bytes they took (the rest is an unterminated line).
    private mutating func takeWholeLines(
        _ bytes: UnsafeRawBufferPointer, of chunk: ByteBuffer, into batch: inout ReceivedBatch
    ) -> Int {
        let maxLineBytes = splitter.maxLineBytes
        // Accepted lines since `runStart`, not yet added to the batch.
        var runStart = 0
        var runLines = 0
        func endRun(at end: Int) {
            if runLines > 0 {
                batch.lines.append(run: chunk.getSlice(at: chunk.readerIndex + runStart, length: end - runStart)!, lineCount: runLines)
            }
            runLines = 0
        }
        let consumed = NewlineScan.forEachLine(in: bytes) { text, _ in
            let (position, end) = (text.lowerBound, text.upperBound)
            let verdict: Verdict
            if end - position > maxLineBytes {
                verdict = .rejected(.tooLong(length: end - position))
            } else {
                verdict = sort(UnsafeRawBufferPointer(rebasing: bytes[position..<end]), into: &batch)
            }
            switch verdict {
            case .accepted:
                if runLines == 0 { runStart = position }
                runLines += 1
            case .skipped:
                endRun(at: position)
            case .rejected(let kind):
                endRun(at: position)
                if case .malformed(let error, _) = kind {
                    let line = chunk.getSlice(at: chunk.readerIndex + position, length: end - position)!
                    batch.reject(RejectNote(stream: stream, kind: .malformed(error, line: line)))
                } else {
                    batch.reject(RejectNote(stream: stream, kind: kind))
                }
            }
        }
        endRun(at: consumed)
        return consumed
    }

    /// Sorts the lines the splitter completed (or reported too long) into `batch`.
    private mutating func takeSplitterPieces(into batch: inout ReceivedBatch) {
        while let piece = splitter.nextLine() {
            switch piece {
            case .tooLong(let length):
                batch.reject(RejectNote(stream: stream, kind: .tooLong(length: length)))
            case .line(let line):
                let verdict = line.withUnsafeReadableBytes { sort($0, into: &batch) }
                switch verdict {
                case .accepted:
                    var run = line
                    run.writeInteger(UInt8(ascii: "\n"))
                    batch.lines.append(run: run, lineCount: 1)
                case .skipped:
                    break
                case .rejected(let kind):
                    guard case .malformed(let error, _) = kind else { break }
                    batch.reject(RejectNote(stream: stream, kind: .malformed(error, line: line)))
                }
            }
        }
    }

    /// What becomes of one line.
    private enum Verdict {
        /// A record to store.
        case accepted
        /// A heartbeat, a duplicate or a record sent again: counted, not stored.
        case skipped
        /// Set aside for the rejects file (a malformed line's `line` is filled in by the caller).
        case rejected(RejectNote.Kind)
    }

    /// Scans one line (without terminator) and updates the mark, origins and counters.
    private mutating func sort(_ line: UnsafeRawBufferPointer, into batch: inout ReceivedBatch) -> Verdict {
        let summary: WireLineSummary
        do {
            summary = try WireLineParser.scan(line)
        } catch {
            return .rejected(.malformed(error, line: ByteBuffer()))
        }
        switch summary {
        case .heartbeat:
            batch.heartbeats += 1
            return .skipped
        case .configStatus(let status):
            batch.configStatuses.append(status)
            return .skipped
        case .record(let sequence, let timestamp, let origin):
            if sequence <= mark {
                batch.duplicates += 1
                return .skipped
            }
            if sequence - mark > 1 { batch.gaps.append(SequenceGap(after: mark, next: sequence)) }
            mark = sequence
            batch.raisesMark = true
            if let origin {
                if origin.id == recentOriginID {
                    guard origin.offset > recentOriginOffset else {
                        batch.resent += 1
                        return .skipped
                    }
                } else {
                    if let stored = originMarks[origin.id], origin.offset <= stored {
                        batch.resent += 1
                        return .skipped
                    }
                    settleRecentOrigin(into: &batch)
                    recentOriginID = origin.id
                }
                recentOriginOffset = origin.offset
            }
            batch.newestRecordTime = timestamp
            return .accepted
        }
    }

    private static func firstNewline(in chunk: ByteBuffer) -> Int? {
        chunk.withUnsafeReadableBytes { NewlineScan.first(in: $0) }
    }
}

extension ReceivedBatch {
    /// Appends a later batch of the same stream.
    mutating func merge(_ later: ReceivedBatch) {
        lines.append(contentsOf: later.lines)
        highestSequence = max(highestSequence, later.highestSequence)
        if let time = later.newestRecordTime { newestRecordTime = time }
        raisesMark = raisesMark || later.raisesMark
        origins.merge(later.origins) { max($0, $1) }
        duplicates += later.duplicates
        resent += later.resent
        heartbeats += later.heartbeats
        gaps.append(contentsOf: later.gaps)
        rejects.append(contentsOf: later.rejects.prefix(max(0, Self.maximumRejectNotes - rejects.count)))
        tooLong += later.tooLong
        malformed += later.malformed
        configStatuses = ConfigStatus.reportable(configStatuses + later.configStatuses)
    }
}

extension ConfigStatus {
    /// Of an agent's `config_status` lines in the order received, what counts: the last (the agent's report), and
    /// before it the last failure (`failed` or `rolled_back`), which still counts towards halting a rollout.
    static func reportable(_ statuses: [ConfigStatus]) -> [ConfigStatus] {
        guard let last = statuses.last else { return [] }
        guard let failure = statuses.dropLast().last(where: { $0.state == .failed || $0.state == .rolledBack }) else {
            return [last]
        }
        return [failure, last]
    }
}
