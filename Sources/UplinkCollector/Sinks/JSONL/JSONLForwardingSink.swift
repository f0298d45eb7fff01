import NIOCore
import NIOPosix
import Synchronization
import UplinkCore
import UplinkFiles

/// `type: jsonl`: appends the log's stored lines, unchanged, to `path` (default `<data_dir>/records.jsonl`), the
/// same form the collector writes without `sinks`. After a crash the last batch may be appended twice (the cursor
/// is persisted after the write); readers deduplicate on (agent, epoch, seq). A batch cut off by the crash leaves a
/// last line without its newline: `prepare` removes it before anything is appended, so every line stays whole
/// JSON (the batch is sent again, its cursor was not persisted). Like records.jsonl, only the file's tail stays in
/// the page cache (`PageCacheTail`).
struct JSONLForwardingSink: ForwardingSink {
    let path: String
    private let cachedTail = CachedTail()

    /// The sink's `PageCacheTail`, shared by the copies of this value (deliveries are one at a time).
    private final class CachedTail: Sendable {
        let tail = Mutex(PageCacheTail())
    }

    init(path: String) throws(CollectorError) {
        self.path = path
        try FileIO.makeDirectories(AtomicFile.parentDirectory(of: path))
    }

    func prepare() async throws(SinkFailure) {
        let path = self.path
        do {
            try await NIOThreadPool.singleton.runIfActive { try Self.cutUnterminatedTail(path) }
        } catch {
            throw SinkFailure(.retry, "\(error)")
        }
    }

    /// Truncates `path` just after its last newline (a missing file is left missing).
    static func cutUnterminatedTail(_ path: String) throws(CollectorError) {
        guard let descriptor = try FileIO.openForUpdate(path, create: false) else { return }
        defer { FileIO.closeFile(descriptor) }
        let size = try FileIO.fileSize(descriptor, path: path)
        var end = size
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 1)
        defer { block.deallocate() }
        while end > 0 {
            let start = max(0, end - Int64(block.count))
            let count = Int(end - start)
            let read = try FileIO.readFile(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: block[0..<count]), at: start, path: path)
            guard read == count else { break }
            if let newline = NewlineScan.last(in: UnsafeRawBufferPointer(block), before: count) {
                end = start + Int64(newline) + 1
                break
            }
            end = start
        }
        if end < size { try FileIO.truncateFile(descriptor, to: end, path: path) }
    }

    func deliver(_ batch: ForwardBatch) async throws(SinkFailure) {
        let path = self.path
        let cachedTail = self.cachedTail
        do {
            try await NIOThreadPool.singleton.runIfActive {
                let descriptor = try FileIO.openForAppending(path)
                defer { FileIO.closeFile(descriptor) }
                try batch.lines.withUnsafeReadableBytes { raw in
                    try Result { () throws(CollectorError) in try FileIO.writeAll(descriptor, raw, path: path) }.get()
                }
                // Only a page-cache hint: the batch is written, so a failure here must not fail (and repeat) it.
                if let size = try? FileIO.fileSize(descriptor, path: path) {
                    cachedTail.tail.withLock { $0.fileGrew(to: size, descriptor: descriptor) }
                }
            }
        } catch {
            throw SinkFailure(.retry, "\(error)")
        }
    }
}
