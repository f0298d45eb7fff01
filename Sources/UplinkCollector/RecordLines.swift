import NIOCore
import UplinkCore

/// Accepted record lines as they arrived: slices of the received chunks ("runs"), each holding one or more whole
/// lines with their terminators (`\n` or `\r\n`).
///
/// A chunk's consecutive accepted lines stay one slice, so a batch of thousands of lines costs a few buffers, not
/// one per line; `forEach` hands out each line without its terminator.
public struct RecordLines: Sendable {
    /// Slices of whole, terminated lines, in stream order.
    public private(set) var runs: [ByteBuffer] = []
    /// How many lines the runs hold.
    public private(set) var count = 0
    /// Bytes of the runs, terminators included.
    public private(set) var byteCount = 0

    /// No lines.
    public init() {}

    /// The given lines (without terminators), copied into one run.
    public init(_ lines: [ByteBuffer]) {
        guard !lines.isEmpty else { return }
        var run = ByteBufferAllocator().buffer(capacity: lines.reduce(0) { $0 + $1.readableBytes + 1 })
        for var line in lines {
            run.writeBuffer(&line)
            run.writeInteger(UInt8(ascii: "\n"))
        }
        append(run: run, lineCount: lines.count)
    }

    public var isEmpty: Bool { count == 0 }

    /// Adds `run`, which holds `lineCount` whole lines, each ending in `\n`.
    mutating func append(run: ByteBuffer, lineCount: Int) {
        guard lineCount > 0 else { return }
        runs.append(run)
        count += lineCount
        byteCount += run.readableBytes
    }

    /// Adds the lines of `other` after these.
    mutating func append(contentsOf other: RecordLines) {
        runs.append(contentsOf: other.runs)
        count += other.count
        byteCount += other.byteCount
    }

    /// Calls `body` with each line's bytes, without its terminator, in order.
    public func forEach(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        for run in runs {
            try run.withUnsafeReadableBytes { bytes in
                _ = try NewlineScan.forEachLine(in: bytes) { text, _ in try body(UnsafeRawBufferPointer(rebasing: bytes[text])) }
            }
        }
    }

    /// Each line's bytes without its terminator (copies; for tests and diagnostics).
    public var lineArrays: [[UInt8]] {
        var lines: [[UInt8]] = []
        lines.reserveCapacity(count)
        forEach { lines.append(Array($0)) }
        return lines
    }
}

extension RecordLines {
    /// Calls `body` with each `\n`-terminated line of `buffer`, without its terminator.
    static func forEachLine(in buffer: ByteBuffer, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        var lines = RecordLines()
        lines.append(run: buffer, lineCount: 1)
        try lines.forEach(body)
    }
}
