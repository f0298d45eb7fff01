import NIOCore
import UplinkCore

/// Accepted record lines as they arrived: slices of the received chunks ("runs"), each holding one or more whole
/// lines with their terminators (`\n` or `\r\n`).
///
/// A chunk's consecutive accepted lines stay one slice, so a batch of thousands of lines costs a few buffers, not
/// one per line; `forEach` hands out each line without its terminator. Where each line ends is kept from when the
/// lines were found (the collector's loop looks for the newlines once), so that writing them on the storage thread
/// does not look again: that second scan was 3 % of a collector's CPU in a bulk transfer. Nor does `forEach` read
/// a line's bytes to find its end: by the time the storage thread writes them they have left its core's caches,
/// and a look at each line's last byte was a cache miss out of order with the copy that follows.
public struct RecordLines: Sendable {
    /// Slices of whole, terminated lines, in stream order.
    public private(set) var runs: [ByteBuffer] = []
    /// For every line of `runs`, in order, the offset in its run just past its `\n` (a run's last line ends at the
    /// run's end), with `crlfFlag` set when a `\r` stands before that `\n`.
    private var lineEnds: [UInt32] = []
    /// Marks a line end of `lineEnds` whose terminator is `\r\n`. Lines are far shorter than 2 GiB.
    static let crlfFlag: UInt32 = 1 << 31
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
        var ends: [UInt32] = []
        ends.reserveCapacity(lines.count)
        for var line in lines {
            run.writeBuffer(&line)
            run.writeInteger(UInt8(ascii: "\n"))
            ends.append(UInt32(run.readableBytes))
        }
        append(run: run, lineEnds: ends)
    }

    public var isEmpty: Bool { count == 0 }

    /// Adds `run`, whose whole lines (each ending in `\n`) end at `lineEnds`, in order, the last at the run's end.
    mutating func append(run: ByteBuffer, lineEnds: [UInt32]) {
        guard let last = lineEnds.last else { return }
        precondition(Int(last & ~Self.crlfFlag) == run.readableBytes, "a run's last line ends at the run's end")
        runs.append(run)
        self.lineEnds.append(contentsOf: lineEnds)
        count += lineEnds.count
        byteCount += run.readableBytes
    }

    /// Adds `line`, which holds one whole line ending in `\n` (or `\r\n`).
    mutating func append(line: ByteBuffer) {
        guard line.readableBytes > 0 else { return }
        let crlf = line.readableBytes >= 2 && line.getInteger(at: line.writerIndex - 2, as: UInt8.self) == UInt8(ascii: "\r")
        runs.append(line)
        lineEnds.append(UInt32(line.readableBytes) | (crlf ? Self.crlfFlag : 0))
        count += 1
        byteCount += line.readableBytes
    }

    /// Adds the lines of `other` after these.
    mutating func append(contentsOf other: RecordLines) {
        runs.append(contentsOf: other.runs)
        lineEnds.append(contentsOf: other.lineEnds)
        count += other.count
        byteCount += other.byteCount
    }

    /// Calls `body` with each line's bytes, without its terminator, in order.
    public func forEach(_ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        var endIndex = 0
        for run in runs {
            try run.withUnsafeReadableBytes { bytes in
                var start = 0
                while start < bytes.count {
                    let end = lineEnds[endIndex]
                    endIndex += 1
                    let next = Int(end & ~Self.crlfFlag)
                    let textEnd = next - (end & Self.crlfFlag != 0 ? 2 : 1)
                    precondition(textEnd >= start && next <= bytes.count, "line ends out of step with the runs")
                    try body(UnsafeRawBufferPointer(rebasing: bytes[start..<textEnd]))
                    start = next
                }
            }
        }
    }

    /// Calls `body` with the last line's bytes (without its terminator); nil when there are no lines.
    func withLastLine<T>(_ body: (UnsafeRawBufferPointer) -> T) -> T? {
        guard let run = runs.last else { return nil }
        return run.withUnsafeReadableBytes { bytes -> T? in
            NewlineScan.lastLine(in: bytes).map { body(UnsafeRawBufferPointer(rebasing: bytes[$0])) }
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
    /// Calls `body` with each `\n`-terminated line of `buffer` (lines read back from the log), without its
    /// terminator; an unfinished last line is left out.
    static func forEachLine(in buffer: ByteBuffer, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
        try buffer.withUnsafeReadableBytes { bytes in
            _ = try NewlineScan.forEachLine(in: bytes) { text, _ in try body(UnsafeRawBufferPointer(rebasing: bytes[text])) }
        }
    }
}
