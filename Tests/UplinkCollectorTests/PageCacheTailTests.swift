import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkCollector

/// The collector's stored files keep only their tail in the page cache (`PageCacheTail`), and nothing of what is
/// written changes for it.
@Suite(.computeBound) struct PageCacheTailTests {
    @Test func onlyTheTailOfAGrowingFileStaysCached() throws {
        let directory = try Self.directoryOnARealFileSystem()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/records.jsonl"
        let descriptor = try FileIO.openForAppending(path)
        let tail = PageCacheTail(tailBytes: 1 << 20, stepBytes: 256 << 10)
        let sink = LogSegmentWriter(path: path, descriptor: descriptor, size: 0, fsync: false, cachedTail: tail)

        // 48 MiB in writes of 512 lines of about 200 bytes, as the storage thread makes them.
        let filler = String(repeating: "x", count: 160)
        var sequence: UInt64 = 0
        while sink.size < 48 << 20 {
            var lines: [ByteBuffer] = []
            for _ in 0..<512 {
                sequence += 1
                lines.append(ByteBufferAllocator().buffer(string: #"{"seq":\#(sequence),"ts":1,"src":"s","log":"\#(filler)"}"#))
            }
            try sink.write([CollectorBatch(stream: StreamKey(agent: "a", epoch: 1), lines: RecordLines(lines), highestSequence: sequence)])
        }
        let size = sink.size
        let cached = try #require(Self.cachedBytes(path: path))
        // The tail, one step not yet dropped, and a large folio straddling the last drop's end.
        #expect(cached <= (1 << 20) + (256 << 10) + (2 << 20), "\(cached) of \(size) bytes cached")

        // Every line is in the file, whole and in order, whatever left the cache.
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let stored = text.split(separator: "\n")
        #expect(Int64(text.utf8.count) == size)
        #expect(stored.count == Int(sequence))
        #expect(stored.first?.hasPrefix(#"{"agent":"a","epoch":1,"seq":1,"#) == true)
        #expect(stored.last?.hasPrefix(#"{"agent":"a","epoch":1,"seq":\#(sequence),"#) == true)
    }

    @Test func theJSONLSinkKeepsOnlyItsTailCachedToo() async throws {
        let directory = try Self.directoryOnARealFileSystem()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/out.jsonl"
        let sink = try JSONLForwardingSink(path: path)
        let line = #"{"agent":"a","epoch":1,"seq":1,"ts":1,"src":"s","log":"\#(String(repeating: "y", count: 160))"}"# + "\n"
        let block = String(repeating: line, count: 4_096)
        var written = 0
        while written < 64 << 20 {
            try await sink.deliver(ForwardBatch(lines: ByteBufferAllocator().buffer(string: block)))
            written += block.utf8.count
        }
        let cached = try #require(Self.cachedBytes(path: path))
        #expect(cached <= PageCacheTail.defaultTailBytes + PageCacheTail.defaultStepBytes + (2 << 20), "\(cached) of \(written) bytes cached")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.size] as? Int) == written)
    }

    /// `actsOnGrowth(to:)` says beforehand whether `fileGrew(to:)` does anything (so the storage may write on a
    /// stream's thread only when nothing can wait for the device), for growths of every size across many steps.
    @Test func actsOnGrowthForetellsWhatFileGrewDoes() throws {
        let directory = try TestDirectories.make("uplink-page-steps")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let descriptor = try FileIO.openForAppending(directory + "/file")
        defer { FileIO.closeFile(descriptor) }
        var tail = PageCacheTail(tailBytes: 64 << 10, stepBytes: 16 << 10)
        var random = SystemRandomNumberGenerator()
        var size: Int64 = 0
        var acted = 0
        for _ in 0..<2_000 {
            size += Int64.random(in: 1...(6 << 10), using: &random)
            let foretold = tail.actsOnGrowth(to: size)
            let before = tail
            tail.fileGrew(to: size, descriptor: descriptor)
            #expect(foretold == (tail != before), "at \(size) bytes")
            if foretold { acted += 1 }
        }
        #expect(acted > 100, "the steps were crossed")
        // A file truncated behind the writer starts over without acting.
        #expect(!tail.actsOnGrowth(to: 100))
    }

    /// A directory where page-cache hints act: tmpfs keeps every page in memory whatever it is told, so when the
    /// temporary directory is on one, the test uses one in the package's build folder.
    private static func directoryOnARealFileSystem() throws -> String {
        for parent in [NSTemporaryDirectory(), FileManager.default.currentDirectoryPath + "/.build"] {
            let directory = parent + "/uplink-page-cache-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            // A probe: 64 KiB written, synced and dropped must leave the cache.
            let probe = directory + "/probe"
            let fd = try FileIO.openForAppending(probe)
            try FileIO.writeAll(fd, [UInt8](repeating: 1, count: 64 << 10), path: probe)
            try FileIO.syncFile(fd, path: probe)
            FileIO.dropCachedPages(fd, offset: 0, count: 64 << 10)
            FileIO.closeFile(fd)
            if cachedBytes(path: probe) == 0 { return directory }
            try? FileManager.default.removeItem(atPath: directory)
        }
        throw CollectorError(code: "test", message: "no directory on a file system that drops pages when told to")
    }

    /// How many bytes of the file's pages are in the page cache (mincore over a read-only mapping).
    private static func cachedBytes(path: String) -> Int64? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0 else { return nil }
        let length = Int(status.st_size)
        guard length > 0 else { return 0 }
        guard let mapping = mmap(nil, length, PROT_READ, MAP_SHARED, fd, 0), mapping != MAP_FAILED else { return nil }
        defer { munmap(mapping, length) }
        let pageBytes = Int(sysconf(Int32(_SC_PAGESIZE)))
        var resident = [UInt8](repeating: 0, count: (length + pageBytes - 1) / pageBytes)
        guard mincore(mapping, length, &resident) == 0 else { return nil }
        return Int64(resident.reduce(0) { $0 + Int($1 & 1) }) * Int64(pageBytes)
    }
}
