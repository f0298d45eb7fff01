import NIOCore
import UplinkCore
import UplinkWire

/// The stored form of an accepted record, the one line format of the collector's log (and so of `records.jsonl`):
/// the received record line with the agent id and epoch spliced in after its `{`,
///
/// ```
/// {"agent":"<id>","epoch":<E>,"seq":N,"ts":…,…}
/// ```
///
/// The only writer and parser of that form: the storage thread writes it (`append`), start-up recovery reads the
/// key of each line past the ledger (`key(of:)`), and forwarders decode lines only when a sink asks for the record
/// (`entry(of:)`). Agent ids are `[A-Za-z0-9._:-]` (validated on arrival), so the id needs no escaping and ends at
/// the next `"`.
public enum StoredLine {
    /// What recovery needs of a stored line: whose it is, its sequence and, for file lines, its origin.
    public struct Key: Sendable, Equatable {
        /// The agent and epoch of the prefix.
        public var stream: StreamKey
        /// The record's `seq`.
        public var sequence: UInt64
        /// The record's origin and offset, for lines of files (docs/protocol.md, "Origins").
        public var origin: RecordOrigin?

        /// A key, for comparisons.
        public init(stream: StreamKey, sequence: UInt64, origin: RecordOrigin? = nil) {
            self.stream = stream
            self.sequence = sequence
            self.origin = origin
        }
    }

    /// `{"agent":"<id>","epoch":<E>,`: what goes in front of every line of `stream`, in place of the line's `{`.
    public static func prefix(for stream: StreamKey) -> [UInt8] {
        var prefix: [UInt8] = Array(#"{"agent":"#.utf8)
        WireLineWriter.appendJSONString(stream.agent, to: &prefix)
        prefix.append(contentsOf: #","epoch":"#.utf8)
        prefix.append(contentsOf: String(stream.epoch).utf8)
        prefix.append(UInt8(ascii: ","))
        return prefix
    }

    /// At most how many bytes `append(_:to:)` writes for `batch`: each line with the prefix (the agent id, the
    /// keys and an epoch of up to 20 digits) and a newline.
    public static func maximumStoredBytes(of batch: CollectorBatch) -> Int {
        batch.lines.byteCount + batch.lines.count * (batch.stream.agent.utf8.count + 48)
    }

    /// Appends the stored form of every line of `batch`, each ending in `\n`.
    public static func append(_ batch: CollectorBatch, to bytes: inout [UInt8]) {
        let prefix = prefix(for: batch.stream)
        batch.lines.forEach { raw in append(raw, prefix: prefix, to: &bytes) }
    }

    /// Appends the stored form of one received line (a JSON object, as checked on arrival; leading whitespace is
    /// skipped) with `prefix` from `prefix(for:)`, and a `\n`.
    public static func append(_ received: UnsafeRawBufferPointer, prefix: [UInt8], to bytes: inout [UInt8]) {
        var start = 0
        while start < received.count && received[start] != UInt8(ascii: "{") { start += 1 }
        bytes.append(contentsOf: prefix)
        if start < received.count { bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: received[(start + 1)...])) }
        bytes.append(UInt8(ascii: "\n"))
    }

    /// The agent and epoch at the front of a stored line (without its newline), nil when it does not start with
    /// `{"agent":"<valid id>","epoch":<epoch in range>,`.
    public static func stream(of line: UnsafeRawBufferPointer) -> StreamKey? {
        var index = 0
        guard line.consume(#"{"agent":""#, at: &index) else { return nil }
        let agentStart = index
        // An id is at most 128 bytes: do not walk a long line looking for its end.
        let agentLimit = min(line.count, agentStart + StreamHeaders.maximumAgentIDLength + 1)
        while index < agentLimit && line[index] != UInt8(ascii: "\"") { index += 1 }
        guard index < agentLimit, let agent = AgentID.validated(line[agentStart..<index]),
            line.consume(#"","epoch":"#, at: &index)
        else { return nil }
        let epochStart = index
        // 2^63 − 1 has 19 digits.
        let epochLimit = min(line.count, epochStart + 20)
        while index < epochLimit && line[index] != UInt8(ascii: ",") { index += 1 }
        guard index < epochLimit, let epoch = StreamHeaders.epoch(line[epochStart..<index]) else { return nil }
        return StreamKey(agent: agent, epoch: epoch)
    }

    /// Stream, sequence and origin of a stored line, without decoding the record; nil when the line is not a
    /// stored record (a wrong or cut prefix, a line that is not a record line, numbers out of range).
    public static func key(of line: UnsafeRawBufferPointer) -> Key? {
        guard let stream = stream(of: line), case .record(let sequence, _, let origin)? = try? WireLineParser.scan(line) else {
            return nil
        }
        return Key(stream: stream, sequence: sequence, origin: origin)
    }

    /// The decoded entry of a stored line (without its newline), nil when the line is not a stored record.
    public static func entry(of line: UnsafeRawBufferPointer) -> LogEntry? {
        guard let stream = stream(of: line), case .record(let sequence, let record)? = try? WireLineParser.decode(line) else {
            return nil
        }
        return LogEntry(agent: stream.agent, epoch: stream.epoch, sequence: sequence, record: record)
    }

    /// `key(of:)` of a line held in a buffer.
    public static func key(of line: ByteBuffer) -> Key? {
        line.withUnsafeReadableBytes { key(of: $0) }
    }
}
