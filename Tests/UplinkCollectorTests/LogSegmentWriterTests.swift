import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkCollector

/// The log's segment writer writes a group in pieces of `writeChunkBytes`, and the file holds exactly the stored form
/// of every line, in order, as one write of the whole group would have.
@Suite struct LogSegmentWriterTests {
    @Test func aGroupLargerThanOnePieceIsStoredWholeAndInOrder() throws {
        let directory = try TestDirectories.make("uplink-segment-writer")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/records.jsonl"
        let writer = LogSegmentWriter(path: path, descriptor: try FileIO.openForAppending(path), size: 0, fsync: false)

        // Three streams interleaved, about 2.7 pieces in all, lines of different lengths so pieces end mid-batch.
        var batches: [CollectorBatch] = []
        var expected: [UInt8] = []
        var first: [String: UInt64] = [:]
        var total = 0
        var round = 0
        while total < LogSegmentWriter.writeChunkBytes * 27 / 10 {
            let agent = ["a", "b", "c"][round % 3]
            let batch = logBatch(agent, from: first[agent, default: 1], count: 700 + round * 13, padding: 40 + round % 90)
            first[agent, default: 1] += UInt64(batch.lines.count)
            StoredLine.append(batch, to: &expected)
            batches.append(batch)
            total = expected.count
            round += 1
        }
        try writer.write(Array(batches.prefix(2)))
        let sizeAfterFirst = writer.size
        try writer.write(Array(batches.dropFirst(2)))

        let stored = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(Int64(stored.count) == writer.size)
        #expect(stored.count == expected.count)
        #expect(stored == expected)
        #expect(sizeAfterFirst < writer.size)
    }

    @Test func aFailedWriteLeavesTheFileAsItWas() throws {
        let directory = try TestDirectories.make("uplink-segment-writer")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/records.jsonl"
        let before = Array(#"{"agent":"a","epoch":1,"seq":1,"ts":1,"src":"s","log":"kept"}"#.utf8) + [0x0A]
        try Data(before).write(to: URL(fileURLWithPath: path))
        // Read-only: every write fails, as a full disk's would.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        #expect(descriptor >= 0)
        let writer = LogSegmentWriter(path: path, descriptor: descriptor, size: Int64(before.count), fsync: false)

        #expect(throws: CollectorError.self) {
            try writer.write([logBatch("a", from: 2, count: 20_000)])
        }
        #expect(writer.size == Int64(before.count))
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: path))) == before)
    }
}
