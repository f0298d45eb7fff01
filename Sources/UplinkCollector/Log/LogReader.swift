import NIOCore
import UplinkCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads whole lines of the log from an offset; used by forwarders on a thread pool (blocking reads).
enum LogReader {
    struct Chunk {
        /// Whole lines, each ending in `\n`; empty when nothing is readable yet.
        var lines: ByteBuffer
        /// Where the lines start: `from`, or the first segment's base when retention deleted what was at `from`.
        var start: Int64
        /// The offset just past the lines.
        var end: Int64
    }

    /// Up to about `maxBytes` of whole lines from `from` (more when a single line is longer), not past the log's
    /// committed end and not across a segment boundary.
    static func read(_ log: CollectorLog, from: Int64, maxBytes: Int) throws(CollectorError) -> Chunk {
        let committed = log.committedEnd
        var cursor = from
        while true {
            let segments = log.segments
            guard let first = segments.first else { return Chunk(lines: ByteBuffer(), start: cursor, end: cursor) }
            if cursor < first.base { cursor = first.base }
            guard let index = segments.lastIndex(where: { $0.base <= cursor }) else {
                return Chunk(lines: ByteBuffer(), start: cursor, end: cursor)
            }
            let segment = segments[index]
            let segmentEnd = index + 1 < segments.count ? segments[index + 1].base : committed
            if cursor >= segmentEnd {
                if index + 1 < segments.count {
                    cursor = segments[index + 1].base
                    continue
                }
                return Chunk(lines: ByteBuffer(), start: cursor, end: cursor)
            }
            guard let descriptor = try FileIO.openForReading(segment.path) else {
                continue  // deleted by retention meanwhile: the list no longer has it
            }
            defer { FileIO.closeFile(descriptor) }
            var want = Int(min(Int64(max(maxBytes, 4096)), segmentEnd - cursor))
            while true {
                var buffer = ByteBufferAllocator().buffer(capacity: want)
                var failure: CollectorError?
                let count = buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: want) { raw in
                    var total = 0
                    while total < want {
                        do throws(CollectorError) {
                            let count = try FileIO.readFile(
                                descriptor, into: UnsafeMutableRawBufferPointer(rebasing: raw[total..<want]),
                                at: cursor - segment.base + Int64(total), path: segment.path)
                            if count == 0 { break }
                            total += count
                        } catch {
                            failure = error
                            return 0
                        }
                    }
                    return total
                }
                if let failure { throw failure }
                let lastNewline = buffer.withUnsafeReadableBytes { raw in NewlineScan.last(in: raw) }
                if let lastNewline {
                    buffer.moveWriterIndex(to: lastNewline + 1)
                    return Chunk(lines: buffer, start: cursor, end: cursor + Int64(lastNewline + 1))
                }
                // A line longer than `want`: read more (the log's committed lines always end in a newline).
                guard count == want, Int64(want) < segmentEnd - cursor else {
                    return Chunk(lines: ByteBuffer(), start: cursor, end: cursor)
                }
                want = Int(min(Int64(want) * 2, segmentEnd - cursor))
            }
        }
    }

    /// How many lines the log holds between `from` and `to` within `segment` (for counting losses).
    static func countLines(_ segment: CollectorLog.Segment, from: Int64, to: Int64) -> UInt64 {
        guard to > from, let descriptor = try? FileIO.openForReading(segment.path) else { return 0 }
        defer { FileIO.closeFile(descriptor) }
        var count: UInt64 = 0
        _ = try? LineReader.forEachLine(
            descriptor, path: segment.path, from: from - segment.base, to: to - segment.base, maxLineBytes: Int.max
        ) { _ in count += 1 }
        return count
    }
}
