import Synchronization
import UplinkCore

/// Encodes records as the ring's frames: a wire line (docs/protocol.md) without its opening `{"seq":N,`, which
/// `WireLineWriter.appendRecordLine` puts in front when the frame is sent.
///
/// A frame looks like `"ts":1763704818123456789,"src":"cpu","metric":"cpu.user","value":12.5,"unit":"percent"}` + `\n`.
///
/// Frames are written with `JSONRawWriter` where their worst case (every byte escaped) fits, so the writing itself
/// has no capacity checks; `encodeLogFrames(_:)` checks that once per line and also writes the parts every line of a
/// batch shares only once.
public struct NDJSONFrameEncoder: RecordFrameEncoder {
    /// The layouts of recent batches: a tailer hands over a batch per wake-up at ordinary rates, the same file's
    /// batches share their layout, and building it (a few allocations) cost as much as encoding a line.
    private let layouts = BatchLayoutCache()

    public init() {}

    /// The record timestamp (nanoseconds since the Unix epoch) at the start of a frame this encoder wrote, or nil
    /// when `prefix` does not start with `"ts":` and a non-negative integer (a frame cut short, or not ours).
    /// `RecordRing.oldestFramePrefix(maxBytes: NDJSONFrameEncoder.timestampPrefixBytes)` gives enough bytes.
    public static func timestamp(ofFramePrefix prefix: [UInt8]) -> Int64? {
        let key = Array(#""ts":"#.utf8)
        guard prefix.count > key.count, prefix.starts(with: key) else { return nil }
        guard let value = ASCIIDecimal.leading(prefix[key.count...]).value, value <= UInt64(Int64.max) else { return nil }
        return Int64(value)
    }

    /// Bytes of a frame's start that hold its timestamp (`"ts":` and 19 digits, with room to spare).
    public static let timestampPrefixBytes = 32

    public func encodeFrame(_ record: Record, into frame: inout [UInt8]) {
        frame.appendJSON(maximumBytes: Self.maximumFrameBytes(record)) { Self.write(record, to: &$0) }
    }

    public func frame(for record: Record) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: Self.maximumFrameBytes(record)) { buffer, count in
            var writer = JSONRawWriter(buffer.baseAddress!)
            Self.write(record, to: &writer)
            count = writer.position - buffer.baseAddress!
        }
    }

    /// Encodes a log record whose message is raw bytes (e.g. a line read from a file), replacing ill-formed UTF-8,
    /// without building a `String` first.
    public func encodeLogFrame(
        timestamp: Int64, source: String, message: UnsafeRawBufferPointer, fields: [Tag], origin: RecordOrigin? = nil,
        into frame: inout [UInt8]
    ) {
        let maximumBytes = Self.fixedFrameBytes + JSONWriting.maximumStringBytes(source.utf8.count)
            + JSONWriting.maximumStringBytes(message.count) + JSONWriting.maximumObjectBytes(fields)
        frame.appendJSON(maximumBytes: maximumBytes) { writer in
            writer.literal(#""ts":"#)
            writer.integer(timestamp)
            writer.literal(#","src":"#)
            writer.string(source)
            writer.literal(#","log":"#)
            writer.string(bytes: message)
            Self.writeLogEnd(fields: fields, origin: origin, to: &writer)
        }
    }

    /// Every line of `batch` straight from its bytes (no `String`, no `Record` per line). A single line
    /// (`encodeLogFrame(_:line:into:)`) takes the protocol's path through a `Record`, which gives the same bytes.
    ///
    /// The frames go into memory sized for what a batch usually takes, not for its worst case: a line is written only
    /// where its own worst case fits, and a batch that escapes more than expected moves to twice the room and goes
    /// on. Sizing the whole batch for its worst case would ask for six times its messages, memory the allocator keeps
    /// while a large backlog drains, and the agent's memory must stay bounded then (docs/deploy.md, "Draining a
    /// backlog").
    public func encodeLogFrames(_ batch: LogLineBatch) -> (frames: [UInt8], ends: [Int]) {
        guard !batch.isEmpty else { return ([], []) }
        let layout = layouts.layout(for: batch)
        var ends: [Int] = []
        ends.reserveCapacity(batch.count)
        var frames: [UInt8] = []
        var room = Self.expectedBytes(of: batch, layout: layout)
        // Lines read together share a timestamp: then `"ts":…,"src":…,"log":` is copied from the frame before.
        var previousStart = 0
        var previousTimestamp: Int64 = 0
        var prefixLength = 0
        while ends.count < batch.count {
            let written = frames
            frames = [UInt8](unsafeUninitializedCapacity: room) { buffer, count in
                let base = buffer.baseAddress!
                written.withUnsafeBytes { old in
                    if let from = old.baseAddress { UnsafeMutableRawPointer(base).copyMemory(from: from, byteCount: old.count) }
                }
                let limit = base + room
                var writer = JSONRawWriter(base + written.count)
                layout.withParts { parts in
                    batch.messageBytes.withUnsafeBytes { messages in
                        batch.lines.withUnsafeBufferPointer { lines in
                            while ends.count < lines.count {
                                let index = ends.count
                                let line = lines[index]
                                guard limit - writer.position >= Self.maximumBytes(of: line, layout: layout) else { return }
                                let start = writer.position - base
                                if prefixLength > 0 && line.timestamp == previousTimestamp {
                                    writer.bytes(UnsafeRawBufferPointer(start: base + previousStart, count: prefixLength))
                                } else {
                                    writer.literal(#""ts":"#)
                                    writer.integer(line.timestamp)
                                    writer.bytes(parts.head)
                                    prefixLength = writer.position - base - start
                                    previousTimestamp = line.timestamp
                                }
                                previousStart = start
                                Self.writeLineRest(of: batch, index, line, messages: messages, parts: parts, to: &writer)
                                ends.append(writer.position - base)
                            }
                        }
                    }
                }
                count = writer.position - base
            }
            if ends.count < batch.count {
                room = max(2 * room, frames.count + Self.maximumBytes(of: batch.lines[ends.count], layout: layout))
            }
        }
        return (frames, ends)
    }

    /// The most bytes `line`'s frame can take: its message as a string (6 bytes per byte at worst, 2 quotes) and its
    /// own fields (a field stored in 8 + k + v bytes is written in at most 6k + 6v + 6, `,"k":"v"`) on top of the
    /// parts every line has.
    private static func maximumBytes(of line: LogLineBatch.Line, layout: BatchLayout) -> Int {
        layout.maximumLineBytes + 6 * (line.end - line.start) + 2 + 6 * (line.extraFieldsEnd - line.extraFieldsStart)
    }

    /// Room that holds the batch in one go unless its messages need many escapes: every line's fixed parts, the
    /// messages with a sixteenth more, and the longest line's worst case (the last line written must fit its own).
    private static func expectedBytes(of batch: LogLineBatch, layout: BatchLayout) -> Int {
        var longest = 0
        for line in batch.lines { longest = max(longest, maximumBytes(of: line, layout: layout)) }
        return batch.count * (layout.maximumLineBytes + 2) + batch.messageBytes.count + batch.messageBytes.count / 16
            + 2 * batch.extraFieldBytes.count + longest
    }

    // MARK: Writing

    /// Room for the keys, integers, numbers and closing bytes of any frame; strings and objects come on top.
    private static let fixedFrameBytes = 128

    private static func maximumFrameBytes(_ record: Record) -> Int {
        var bytes = fixedFrameBytes + JSONWriting.maximumStringBytes(record.source.utf8.count)
        switch record.payload {
        case .metric(let metric):
            bytes += JSONWriting.maximumStringBytes(metric.name.utf8.count)
                + JSONWriting.maximumStringBytes(metric.unit.utf8.count) + JSONWriting.maximumObjectBytes(metric.tags)
        case .log(let line):
            bytes += JSONWriting.maximumStringBytes(line.message.utf8.count) + JSONWriting.maximumObjectBytes(line.fields)
        }
        return bytes
    }

    private static func write(_ record: Record, to writer: inout JSONRawWriter) {
        writer.literal(#""ts":"#)
        writer.integer(record.timestamp)
        writer.literal(#","src":"#)
        writer.string(record.source)
        switch record.payload {
        case .metric(let metric):
            writer.literal(#","metric":"#)
            writer.string(metric.name)
            writer.literal(#","value":"#)
            writer.number(metric.value)
            writer.literal(#","unit":"#)
            writer.string(metric.unit)
            if !metric.tags.isEmpty {
                writer.literal(#","tags":"#)
                writer.object(metric.tags)
            }
            writer.literal("}\n")
        case .log(let line):
            writer.literal(#","log":"#)
            writer.string(line.message)
            writeLogEnd(fields: line.fields, origin: line.origin, to: &writer)
        }
    }

    /// What follows a log record's message.
    private static func writeLogEnd(fields: [Tag], origin: RecordOrigin?, to writer: inout JSONRawWriter) {
        if !fields.isEmpty {
            writer.literal(#","fields":"#)
            writer.object(fields)
        }
        if let origin {
            writer.literal(#","origin":"#)
            writer.decimal(origin.id)
            writer.literal(#","offset":"#)
            writer.decimal(origin.offset)
        }
        writer.literal("}\n")
    }

    /// A batch line's frame from its message on.
    @inline(__always)
    private static func writeLineRest(
        of batch: LogLineBatch, _ index: Int, _ line: LogLineBatch.Line, messages: UnsafeRawBufferPointer,
        parts: BatchLayout.Parts, to writer: inout JSONRawWriter
    ) {
        writer.string(bytes: UnsafeRawBufferPointer(rebasing: messages[line.start..<line.end]))
        if line.hasExtraFields {
            writer.bytes(parts.fieldsOpen)
            var first = batch.fields.isEmpty
            batch.forEachExtraField(ofLine: index) { key, value in
                if !first { writer.byte(UInt8(ascii: ",")) }
                first = false
                writer.string(bytes: key)
                writer.byte(UInt8(ascii: ":"))
                writer.string(bytes: value)
            }
            writer.byte(UInt8(ascii: "}"))
            writer.bytes(parts.origin)
        } else {
            writer.bytes(parts.tail)
        }
        if batch.originID != 0 { writer.decimal(line.originOffset) }
        writer.literal("}\n")
    }
}

/// The layouts of the last few batches by what decides them (source, fields, origin id), shared by every copy of
/// the encoder (the agent's sources all encode through one).
private final class BatchLayoutCache: Sendable {
    private struct Entry {
        let source: String
        let fields: [Tag]
        let originID: UInt64
        let layout: BatchLayout
    }
    /// Enough for the files a few sources read at once; the oldest entry makes room for a new one.
    private static let capacity = 8
    private let entries = Mutex<(list: [Entry], next: Int)>(([], 0))

    func layout(for batch: LogLineBatch) -> BatchLayout {
        let cached = entries.withLock { state in
            state.list.first { $0.originID == batch.originID && $0.source == batch.source && $0.fields == batch.fields }
        }
        if let cached { return cached.layout }
        let entry = Entry(source: batch.source, fields: batch.fields, originID: batch.originID, layout: BatchLayout(batch))
        entries.withLock { state in
            if state.list.count < Self.capacity {
                state.list.append(entry)
            } else {
                state.list[state.next] = entry
                state.next = (state.next + 1) % Self.capacity
            }
        }
        return entry.layout
    }
}

/// The parts of a batch's frames that are the same on every line, encoded once.
private struct BatchLayout {
    /// `head`, `fieldsOpen`, `tail` and `origin` back to back.
    private let bytes: [UInt8]
    private let headEnd: Int
    private let fieldsOpenEnd: Int
    private let tailEnd: Int

    /// Most bytes a line's frame takes besides its message (quotes included) and its own fields.
    let maximumLineBytes: Int

    struct Parts {
        /// `,"src":"<source>","log":`
        let head: UnsafeRawBufferPointer
        /// `,"fields":{` and the batch's fields (without a closing brace), for lines with fields of their own.
        let fieldsOpen: UnsafeRawBufferPointer
        /// What follows the message on a line without fields of its own: the fields object if the batch has
        /// fields, then `origin`.
        let tail: UnsafeRawBufferPointer
        /// `,"origin":<id>,"offset":` when the batch has an origin id; empty otherwise.
        let origin: UnsafeRawBufferPointer
    }

    init(_ batch: LogLineBatch) {
        var bytes: [UInt8] = Array(#","src":"#.utf8)
        JSONWriting.appendString(batch.source, to: &bytes)
        bytes.append(contentsOf: #","log":"#.utf8)
        headEnd = bytes.count

        let fieldsStart = bytes.count
        bytes.append(contentsOf: #","fields":{"#.utf8)
        bytes.appendJSON(maximumBytes: JSONWriting.maximumObjectBytes(batch.fields)) { $0.members(batch.fields, first: true) }
        fieldsOpenEnd = bytes.count

        var origin: [UInt8] = []
        if batch.originID != 0 {
            origin.append(contentsOf: #","origin":"#.utf8)
            JSONWriting.appendInteger(batch.originID, to: &origin)
            origin.append(contentsOf: #","offset":"#.utf8)
        }
        if !batch.fields.isEmpty {
            bytes.append(contentsOf: bytes[fieldsStart..<fieldsOpenEnd])
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(contentsOf: origin)
        tailEnd = bytes.count
        bytes.append(contentsOf: origin)
        self.bytes = bytes

        // "ts": + integer, head, fields (opening, closing brace) or tail, origin, offset, "}\n".
        maximumLineBytes = 5 + JSONWriting.maximumIntegerBytes + headEnd + (fieldsOpenEnd - headEnd) + 1
            + origin.count + JSONWriting.maximumIntegerBytes + 2
    }

    func withParts<Result>(_ body: (Parts) -> Result) -> Result {
        bytes.withUnsafeBytes { bytes in
            body(Parts(
                head: UnsafeRawBufferPointer(rebasing: bytes[0..<headEnd]),
                fieldsOpen: UnsafeRawBufferPointer(rebasing: bytes[headEnd..<fieldsOpenEnd]),
                tail: UnsafeRawBufferPointer(rebasing: bytes[fieldsOpenEnd..<tailEnd]),
                origin: UnsafeRawBufferPointer(rebasing: bytes[tailEnd...])))
        }
    }
}
