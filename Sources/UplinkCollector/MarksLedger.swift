import Logging
import NIOCore
import UplinkWire

/// The marks ledger, `<dataDirectory>/marks.log`: text lines
///
/// ```
/// <agent> <epoch> <mark> <log_end_offset>
/// ```
///
/// appended by the storage thread once the log has the records: for each stream whose mark rose since the last
/// append, its new mark, and the log's end offset (`records.jsonl`'s length when that file is the log). Origin marks
/// use the same line with `<agent>/origin <origin id> <offset>` (see `StreamKey.origin`). The last line of a stream
/// wins. The offset tells start-up recovery from where to scan the log for records written but not yet ledgered:
/// the storage appends only every `Storage.ledgerLagBytes` of log (and before the log rolls, and at shutdown), and
/// a crash can come between two writes. At start-up, and when it grows past `compactionBytes`, the ledger is
/// rewritten with one line per stream, atomically (temporary file, `fsync`, `rename`).
///
/// Used only by the storage thread.
final class MarksLedger {
    let path: String
    let fsync: Bool
    /// Rewrite the ledger once appends made it this long.
    let compactionBytes: Int64
    private var descriptor: Int32
    private var length: Int64
    /// Set after a failed append, which may have left a partial line: the next write rewrites the whole ledger.
    private(set) var needsCompaction = false

    private init(path: String, descriptor: Int32, length: Int64, fsync: Bool, compactionBytes: Int64) {
        self.path = path
        self.descriptor = descriptor
        self.length = length
        self.fsync = fsync
        self.compactionBytes = compactionBytes
    }

    deinit {
        FileIO.closeFile(descriptor)
    }

    /// Writes a compacted ledger for `marks` and opens it for appending.
    static func create(
        path: String, marks: [StreamKey: UInt64], recordsSize: Int64, fsync: Bool, compactionBytes: Int64 = 16 << 20
    ) throws(CollectorError) -> MarksLedger {
        let length = try writeCompacted(path: path, marks: marks, recordsSize: recordsSize)
        let descriptor = try FileIO.openForAppending(path)
        return MarksLedger(path: path, descriptor: descriptor, length: length, fsync: fsync, compactionBytes: compactionBytes)
    }

    /// Appends one line per entry.
    func append(_ entries: [(StreamKey, UInt64)], recordsSize: Int64) throws(CollectorError) {
        var bytes: [UInt8] = []
        for (stream, mark) in entries { MarksLedger.appendLine(stream, mark, recordsSize, to: &bytes) }
        do throws(CollectorError) {
            try FileIO.writeAll(descriptor, bytes, path: path)
            if fsync { try FileIO.syncFile(descriptor, path: path) }
            length += Int64(bytes.count)
        } catch {
            needsCompaction = true
            throw error
        }
    }

    /// Whether the ledger should be rewritten now.
    var shouldCompact: Bool { needsCompaction || length >= compactionBytes }

    /// Whether an append of about `bytes` may wait for the device: `fsync` is on, or the append may bring the
    /// rewrite (a temporary file, `fsync`, `rename`).
    func appendMayWait(bytes: Int) -> Bool {
        fsync || needsCompaction || length + Int64(bytes) >= compactionBytes
    }

    /// Rewrites the ledger with one line per stream.
    func compact(marks: [StreamKey: UInt64], recordsSize: Int64) throws(CollectorError) {
        let newLength = try MarksLedger.writeCompacted(path: path, marks: marks, recordsSize: recordsSize)
        let newDescriptor = try FileIO.openForAppending(path)
        FileIO.closeFile(descriptor)
        descriptor = newDescriptor
        length = newLength
        needsCompaction = false
    }

    /// Writes `marks` to a temporary file and renames it over `path`. Returns the new file's length.
    private static func writeCompacted(
        path: String, marks: [StreamKey: UInt64], recordsSize: Int64
    ) throws(CollectorError) -> Int64 {
        var bytes: [UInt8] = []
        for (stream, mark) in marks.sorted(by: { ($0.key.agent, $0.key.epoch) < ($1.key.agent, $1.key.epoch) }) {
            appendLine(stream, mark, recordsSize, to: &bytes)
        }
        try FileIO.writeAtomically(path, bytes)
        return Int64(bytes.count)
    }

    /// An upper bound of one line's length: a stream key (an agent id of up to 128 bytes, or an origin's key) and
    /// three numbers of up to 20 digits.
    static let maximumLineBytes = 320

    static func appendLine(_ stream: StreamKey, _ mark: UInt64, _ recordsSize: Int64, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: stream.agent.utf8)
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: String(stream.epoch).utf8)
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: String(mark).utf8)
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: String(recordsSize).utf8)
        bytes.append(UInt8(ascii: "\n"))
    }

    /// What a ledger file says.
    struct Contents {
        var marks: [StreamKey: UInt64] = [:]
        /// The records size on the last valid line, nil when there is none.
        var lastRecordsSize: Int64?
        var validLines = 0
        var invalidLines = 0
        /// Length of an unterminated last line (a torn append), 0 when there is none.
        var tornBytes = 0
    }

    /// Reads the ledger at `path` (an absent file is an empty ledger), skipping lines that do not parse and an
    /// unterminated last line.
    static func read(path: String) throws(CollectorError) -> Contents {
        var contents = Contents()
        guard let descriptor = try FileIO.openForReading(path) else { return contents }
        defer { FileIO.closeFile(descriptor) }
        let size = try FileIO.fileSize(descriptor, path: path)
        let tail = try LineReader.forEachLine(descriptor, path: path, from: 0, to: size, maxLineBytes: 4096) { piece in
            guard case .line(let line) = piece, let (stream, mark, recordsSize) = parseLine(line) else {
                contents.invalidLines += 1
                return
            }
            contents.marks[stream] = max(contents.marks[stream] ?? 0, mark)
            contents.lastRecordsSize = recordsSize
            contents.validLines += 1
        }
        contents.tornBytes = tail
        return contents
    }

    static func parseLine(_ line: ByteBuffer) -> (StreamKey, UInt64, Int64)? {
        let fields = line.readableBytesView.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        // The same ranges as on the wire: a stream's epoch and mark, or an origin's id and offset
        // (docs/protocol.md, "Integer ranges"); the records size is a file length.
        guard fields.count == 4 else { return nil }
        let stream: StreamKey
        if let agent = AgentID.validated(fields[0]), let epoch = StreamHeaders.epoch(fields[1]) {
            stream = StreamKey(agent: agent, epoch: epoch)
        } else if let key = AgentID.validatedOriginKey(fields[0]),
            let id = WireIntegers.decimal(fields[1], in: WireIntegers.origin)
        {
            stream = StreamKey(agent: key, epoch: id)
        } else {
            return nil
        }
        guard let mark = WireIntegers.decimal(fields[2], in: stream.isOrigin ? WireIntegers.offset : WireIntegers.mark),
            let recordsSize = WireIntegers.decimal(fields[3], in: 0...UInt64(Int64.max))
        else { return nil }
        return (stream, mark, Int64(recordsSize))
    }
}

/// Agent ids: 1-128 bytes of `[A-Za-z0-9._:-]` (docs/protocol.md; `StreamHeaders.agentID`).
enum AgentID {
    /// The agent part of an origin mark's key (`<agent>/origin`), when `bytes` form a valid one.
    static func validatedOriginKey<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String? {
        let suffix = Array(StreamKey.originSuffix.utf8)
        guard bytes.count > suffix.count, bytes.suffix(suffix.count).elementsEqual(suffix),
            validated(bytes.dropLast(suffix.count)) != nil
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The id, when `bytes` form a valid one.
    static func validated<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String? {
        StreamHeaders.agentID(bytes)
    }
}

/// Reads a file's lines with `LineSplitter`, a chunk at a time.
enum LineReader {
    /// Calls `body` for every complete line between `start` and `end`; returns the length of an unterminated
    /// last line (0 when the range ends with a newline).
    static func forEachLine(
        _ descriptor: Int32, path: String, from start: Int64, to end: Int64, maxLineBytes: Int,
        _ body: (LineSplitter.Piece) -> Void
    ) throws(CollectorError) -> Int {
        var splitter = LineSplitter(maxLineBytes: maxLineBytes)
        var offset = start
        let chunkSize = 1 << 20
        var chunk = ByteBufferAllocator().buffer(capacity: chunkSize)
        while offset < end {
            chunk.clear()
            let wanted = Int(min(Int64(chunkSize), end - offset))
            var failure: CollectorError?
            let count = chunk.writeWithUnsafeMutableBytes(minimumWritableBytes: wanted) { raw in
                do throws(CollectorError) {
                    return try FileIO.readFile(
                        descriptor, into: UnsafeMutableRawBufferPointer(rebasing: raw[..<wanted]), at: offset, path: path)
                } catch {
                    failure = error
                    return 0
                }
            }
            if let failure { throw failure }
            guard count > 0 else { break }  // the file is shorter than `end`
            offset += Int64(count)
            splitter.append(chunk)
            while let piece = splitter.nextLine() { body(piece) }
        }
        return splitter.finish() ?? 0
    }
}

/// The marks raised since the ledger's last line, newest per stream and per origin, waiting for the next append
/// (`Storage.ledgerLagBytes`). Origins are kept by agent and id, so raising them per stored batch builds no
/// `StreamKey.origin` key; those are made only for the append.
struct UnledgeredMarks {
    private var streams: [StreamKey: UInt64] = [:]
    /// agent → origin id → offset.
    private var origins: [String: [UInt64: UInt64]] = [:]
    /// How many ledger lines the marks make.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Notes `batch`'s stream mark and origin offsets where they are higher than those noted.
    mutating func raise(_ batch: CollectorBatch) {
        // One lookup of the key (an agent id's hash) for a stream already noted: this runs once per stored chunk.
        if let index = streams.index(forKey: batch.stream) {
            if batch.highestSequence > streams.values[index] { streams.values[index] = batch.highestSequence }
        } else {
            streams[batch.stream] = batch.highestSequence
            count += 1
        }
        guard !batch.origins.isEmpty else { return }
        count += Self.note(batch.origins, in: &origins[batch.stream.agent, default: [:]])
    }

    /// Keeps the higher offset of each origin in `noted` (changed in place); returns how many origins are new there.
    private static func note(_ offsets: [UInt64: UInt64], in noted: inout [UInt64: UInt64]) -> Int {
        var added = 0
        for (origin, offset) in offsets {
            if let previous = noted[origin] {
                if offset > previous { noted[origin] = offset }
            } else {
                noted[origin] = offset
                added += 1
            }
        }
        return added
    }

    /// Every mark as a ledger entry (origins under their `StreamKey.origin` keys), ordered by agent and epoch.
    func sortedEntries() -> [(StreamKey, UInt64)] {
        var entries = streams.map { ($0.key, $0.value) }
        for (agent, offsets) in origins {
            for (origin, offset) in offsets { entries.append((StreamKey.origin(agent: agent, id: origin), offset)) }
        }
        return entries.sorted { ($0.0.agent, $0.0.epoch) < ($1.0.agent, $1.0.epoch) }
    }

    mutating func removeAll(keepingCapacity: Bool) {
        streams.removeAll(keepingCapacity: keepingCapacity)
        origins.removeAll(keepingCapacity: keepingCapacity)
        count = 0
    }
}
