import NIOCore
import Synchronization

/// Appends stored lines (`StoredLine`) to the log's active segment file: `records.jsonl` when that file is the log,
/// otherwise the last `<base>.jsonl` of `<data_dir>/log/`.
///
/// Writes go through write(2) on a descriptor opened with `O_APPEND`, one call per `writeChunkBytes` of a group of
/// batches; when a write fails the file is truncated back to where the group began, so a batch is either wholly in
/// the file or not at all (a crash mid-group leaves whole lines that were never acknowledged, which start-up recovery
/// counts as stored, and perhaps an unterminated last line, which it removes). The file's size after
/// each write is what the marks ledger records. Only the file's last 32 MiB stay in the page cache (`PageCacheTail`).
final class LogSegmentWriter: Sendable {
    let path: String
    let fsync: Bool
    private struct State {
        var descriptor: Int32
        var size: Int64
        /// The bytes of one write, kept between writes so that each does not allocate (and fault in) a new buffer.
        var scratch: [UInt8] = []
        /// What of the file stays in the page cache.
        var cachedTail: PageCacheTail
    }
    private let state: Mutex<State>
    /// How many bytes of stored lines are gathered before they are written: 1 MiB. A group is written in pieces of
    /// this size, so the scratch buffer keeps one size and stays in the CPU's cache between the copy and the write.
    /// Gathering a whole group instead (several MiB in a bulk transfer, above the collector's 4 MiB mapping threshold)
    /// took a fresh mapping for every group, each of its pages faulted in and zeroed: about a tenth of its CPU.
    static let writeChunkBytes = 1 << 20

    /// Takes over `descriptor` (opened for appending) whose file is `size` bytes long.
    init(path: String, descriptor: Int32, size: Int64, fsync: Bool, cachedTail: PageCacheTail = PageCacheTail()) {
        self.path = path
        self.fsync = fsync
        self.state = Mutex(State(descriptor: descriptor, size: size, cachedTail: cachedTail))
    }

    deinit {
        state.withLock { FileIO.closeFile($0.descriptor) }
    }

    /// The file's length after the last write.
    var size: Int64 { state.withLock { $0.size } }

    /// Whether a write of about `bytes` may wait for the device: `fsync` is on, or it crosses a step of the page
    /// cache's writeback (`PageCacheTail.actsOnGrowth(to:)`).
    func writeMayWait(bytes: Int) -> Bool {
        fsync || state.withLock { $0.cachedTail.actsOnGrowth(to: $0.size + Int64(bytes)) }
    }

    /// Appends the stored form of every line of `batches`, in order (and `fsync`s when on). `size` moves once, after
    /// the last piece: the ledger and the forwarders, which read up to it, never see part of a group.
    func write(_ batches: [CollectorBatch]) throws(CollectorError) {
        try state.withLock { state throws(CollectorError) in
            var bytes = state.scratch
            state.scratch = []
            defer {
                bytes.removeAll(keepingCapacity: bytes.capacity <= 2 * LogSegmentWriter.writeChunkBytes)
                state.scratch = bytes
            }
            bytes.reserveCapacity(LogSegmentWriter.writeChunkBytes + 4096)
            var written = 0
            let descriptor = state.descriptor
            func writeGathered() throws(CollectorError) {
                try FileIO.writeAll(descriptor, bytes, path: path)
                written += bytes.count
                bytes.removeAll(keepingCapacity: true)
            }
            do throws(CollectorError) {
                var failure: CollectorError?
                for batch in batches where failure == nil {
                    let prefix = StoredLine.prefix(for: batch.stream)
                    batch.lines.forEach { line in
                        guard failure == nil else { return }
                        StoredLine.append(line, prefix: prefix, to: &bytes)
                        guard bytes.count >= LogSegmentWriter.writeChunkBytes else { return }
                        do throws(CollectorError) { try writeGathered() } catch { failure = error }
                    }
                }
                if let failure { throw failure }
                if !bytes.isEmpty { try writeGathered() }
                guard written > 0 else { return }
                if fsync { try FileIO.syncFile(descriptor, path: path) }
            } catch {
                // Leave the file as it was, so no batch is stored half (and so not acknowledged at all).
                try? FileIO.truncateFile(state.descriptor, to: state.size, path: path)
                throw error
            }
            state.size += Int64(written)
            state.cachedTail.fileGrew(to: state.size, descriptor: state.descriptor)
        }
    }
}
