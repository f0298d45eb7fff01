import NIOCore
import UplinkCore

/// Writes whole wire lines (docs/protocol.md) into outgoing buffers.
public enum WireLineWriter {
    /// Appends `{"seq":<sequence>,` followed by a frame made by `NDJSONFrameEncoder`, which may come in two parts
    /// (as `RecordRing.readUnsent` hands it out). Returns the number of bytes written.
    @inline(__always)
    @discardableResult
    public static func appendRecordLine(
        sequence: UInt64, frame first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer = .init(start: nil, count: 0),
        to buffer: inout ByteBuffer
    ) -> Int {
        // One reservation and raw copies: this runs once per record on the send path, and every separate ByteBuffer
        // write costs a capacity check and an exclusivity check.
        let prefix: StaticString = #"{"seq":"#
        let needed = prefix.utf8CodeUnitCount + 20 + 1 + first.count + second.count
        return buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: needed) { output in
            let base = output.baseAddress!
            var position = prefix.utf8CodeUnitCount
            base.copyMemory(from: prefix.utf8Start, byteCount: position)
            position += JSONWriting.writeDecimal(sequence, to: base + position)
            base.storeBytes(of: UInt8(ascii: ","), toByteOffset: position, as: UInt8.self)
            position += 1
            if let start = first.baseAddress, first.count > 0 {
                (base + position).copyMemory(from: start, byteCount: first.count)
                position += first.count
            }
            if let start = second.baseAddress, second.count > 0 {
                (base + position).copyMemory(from: start, byteCount: second.count)
                position += second.count
            }
            return position
        }
    }

    /// Appends a heartbeat line: `{"heartbeat":<ns since epoch>}`.
    @discardableResult
    public static func appendHeartbeat(timestamp: Int64, to buffer: inout ByteBuffer) -> Int {
        var line: [UInt8] = Array(#"{"heartbeat":"#.utf8)
        JSONWriting.appendInteger(timestamp, to: &line)
        line.append(contentsOf: "}\n".utf8)
        return buffer.writeBytes(line)
    }

    /// Appends a response line: `{"resume":N}` or `{"ack":N}`.
    @discardableResult
    public static func appendAckLine(_ line: AckLine, to buffer: inout ByteBuffer) -> Int {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        switch line {
        case .resume(let sequence):
            bytes.append(contentsOf: #"{"resume":"#.utf8)
            JSONWriting.appendInteger(sequence, to: &bytes)
        case .ack(let sequence):
            bytes.append(contentsOf: #"{"ack":"#.utf8)
            JSONWriting.appendInteger(sequence, to: &bytes)
        }
        bytes.append(contentsOf: "}\n".utf8)
        return buffer.writeBytes(bytes)
    }
}

/// A line of the collector's response.
public enum AckLine: Sendable, Equatable {
    /// The highest sequence the collector already stores for this agent and epoch; sent first, once.
    case resume(UInt64)
    /// The highest sequence stored so far; cumulative.
    case ack(UInt64)
}

extension AckLine {
    /// Reads a response line. Returns nil for every other line, which the agent ignores: lines that are neither
    /// `resume` nor `ack` (a heartbeat reply `{"heartbeat":<ns>}`, or what later protocol versions add), and
    /// `resume`/`ack` lines whose number is not a canonical decimal in `WireIntegers.mark` (0 to 2^63 − 1: a
    /// sign, a fraction, an exponent, a leading zero, or a value no sequence reaches). A collector sending those is
    /// confused, and the agent must not act on them; docs/protocol.md, "Integer ranges".
    public static func parse(_ line: ByteBuffer) -> AckLine? {
        line.withUnsafeReadableBytes { parse($0) }
    }

    /// Reads a response line from raw bytes; see `parse(_:)`.
    public static func parse(_ bytes: UnsafeRawBufferPointer) -> AckLine? {
        var index = 0
        func skipSpaces() {
            while index < bytes.count, bytes[index] == UInt8(ascii: " ") || bytes[index] == UInt8(ascii: "\t") { index += 1 }
        }
        func consume(_ literal: StaticString) -> Bool { bytes.consume(literal, at: &index) }
        skipSpaces()
        guard consume("{") else { return nil }
        skipSpaces()
        let isResume: Bool
        if consume(#""resume""#) { isResume = true } else if consume(#""ack""#) { isResume = false } else { return nil }
        skipSpaces()
        guard consume(":") else { return nil }
        skipSpaces()
        let digitsStart = index
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
        guard let value = WireIntegers.decimal(bytes[digitsStart..<index], in: WireIntegers.mark) else { return nil }
        skipSpaces()
        guard consume("}") else { return nil }
        skipSpaces()
        guard index == bytes.count else { return nil }
        return isResume ? .resume(value) : .ack(value)
    }
}

extension UnsafeRawBufferPointer {
    /// Whether the bytes at `index` spell `literal`; if so, moves `index` past it. For hand-written parsers of the
    /// protocol's fixed-shape lines.
    @inline(__always)
    public func consume(_ literal: StaticString, at index: inout Int) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= self.count else { return false }
        for offset in 0..<count where self[index + offset] != literal.utf8Start[offset] { return false }
        index += count
        return true
    }
}
