import UplinkCore

/// Encodes records as the ring's frames: a wire line (docs/protocol.md) without its opening `{"seq":N,`, which
/// `WireLineWriter.appendRecordLine` puts in front when the frame is sent.
///
/// A frame looks like `"ts":1763704818123456789,"src":"cpu","metric":"cpu.user","value":12.5,"unit":"percent"}` + `\n`.
public struct NDJSONFrameEncoder: RecordFrameEncoder {
    public init() {}

    public func encodeFrame(_ record: Record, into frame: inout [UInt8]) {
        frame.append(contentsOf: #""ts":"#.utf8)
        JSONWriting.appendInteger(record.timestamp, to: &frame)
        frame.append(contentsOf: #","src":"#.utf8)
        JSONWriting.appendString(record.source, to: &frame)
        switch record.payload {
        case .metric(let metric):
            frame.append(contentsOf: #","metric":"#.utf8)
            JSONWriting.appendString(metric.name, to: &frame)
            frame.append(contentsOf: #","value":"#.utf8)
            JSONWriting.appendNumber(metric.value, to: &frame)
            frame.append(contentsOf: #","unit":"#.utf8)
            JSONWriting.appendString(metric.unit, to: &frame)
            if !metric.tags.isEmpty {
                frame.append(contentsOf: #","tags":"#.utf8)
                JSONWriting.appendObject(metric.tags, to: &frame)
            }
        case .log(let line):
            frame.append(contentsOf: #","log":"#.utf8)
            JSONWriting.appendString(line.message, to: &frame)
            if !line.fields.isEmpty {
                frame.append(contentsOf: #","fields":"#.utf8)
                JSONWriting.appendObject(line.fields, to: &frame)
            }
            if let origin = line.origin { Self.appendOrigin(origin, to: &frame) }
        }
        frame.append(contentsOf: "}\n".utf8)
    }

    /// Encodes a log record whose message is raw bytes (e.g. a line read from a file), replacing ill-formed UTF-8,
    /// without building a `String` first.
    public func encodeLogFrame(
        timestamp: Int64, source: String, message: UnsafeRawBufferPointer, fields: [Tag], origin: RecordOrigin? = nil,
        into frame: inout [UInt8]
    ) {
        frame.append(contentsOf: #""ts":"#.utf8)
        JSONWriting.appendInteger(timestamp, to: &frame)
        frame.append(contentsOf: #","src":"#.utf8)
        JSONWriting.appendString(source, to: &frame)
        frame.append(contentsOf: #","log":"#.utf8)
        JSONWriting.appendString(bytes: message, to: &frame)
        if !fields.isEmpty {
            frame.append(contentsOf: #","fields":"#.utf8)
            JSONWriting.appendObject(fields, to: &frame)
        }
        if let origin { Self.appendOrigin(origin, to: &frame) }
        frame.append(contentsOf: "}\n".utf8)
    }

    /// Encodes line `index` of `batch` straight from its bytes (no `String`, no `Record`).
    public func encodeLogFrame(_ batch: LogLineBatch, line index: Int, into frame: inout [UInt8]) {
        let line = batch.lines[index]
        frame.append(contentsOf: #""ts":"#.utf8)
        JSONWriting.appendInteger(line.timestamp, to: &frame)
        frame.append(contentsOf: #","src":"#.utf8)
        JSONWriting.appendString(batch.source, to: &frame)
        frame.append(contentsOf: #","log":"#.utf8)
        batch.messageBytes.withUnsafeBytes { bytes in
            JSONWriting.appendString(bytes: UnsafeRawBufferPointer(rebasing: bytes[line.start..<line.end]), to: &frame)
        }
        if !batch.fields.isEmpty || !line.extraFields.isEmpty {
            frame.append(contentsOf: #","fields":"#.utf8)
            JSONWriting.appendObject(line.extraFields.isEmpty ? batch.fields : batch.fields + line.extraFields, to: &frame)
        }
        if let origin = batch.origin(of: index) { Self.appendOrigin(origin, to: &frame) }
        frame.append(contentsOf: "}\n".utf8)
    }

    private static func appendOrigin(_ origin: RecordOrigin, to frame: inout [UInt8]) {
        frame.append(contentsOf: #","origin":"#.utf8)
        JSONWriting.appendInteger(origin.id, to: &frame)
        frame.append(contentsOf: #","offset":"#.utf8)
        JSONWriting.appendInteger(origin.offset, to: &frame)
    }
}
