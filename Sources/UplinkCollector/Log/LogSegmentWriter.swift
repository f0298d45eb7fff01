import NIOCore
import Synchronization

/// Appends stored lines (`StoredLine`) to the log's active segment file: `records.jsonl` when that file is the log,
/// otherwise the last `<base>.jsonl` of `<data_dir>/log/`.
///
/// Writes go through write(2) on a descriptor opened with `O_APPEND`, one call per group of batches; when a write
/// fails the file is truncated back to its previous end, so a batch is either wholly in the file or not at all
/// (a crash mid-write leaves an unterminated last line, which start-up recovery removes). The file's size after
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
    /// Scratch capacity kept after a write; a larger buffer (after an unusually large write) is let go.
    private static let retainedScratchBytes = 16 << 20

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

    /// Appends the stored form of every line of `batches`, in order, in one write (and `fsync` when on).
    func write(_ batches: [CollectorBatch]) throws(CollectorError) {
        try state.withLock { state throws(CollectorError) in
            var bytes = state.scratch
            state.scratch = []
            defer {
                bytes.removeAll(keepingCapacity: bytes.capacity <= LogSegmentWriter.retainedScratchBytes)
                state.scratch = bytes
            }
            bytes.reserveCapacity(batches.reduce(0) { $0 + $1.lines.byteCount + $1.lines.count * 64 })
            for batch in batches {
                StoredLine.append(batch, to: &bytes)
            }
            guard !bytes.isEmpty else { return }
            do throws(CollectorError) {
                try FileIO.writeAll(state.descriptor, bytes, path: path)
                if fsync { try FileIO.syncFile(state.descriptor, path: path) }
            } catch {
                // Leave the file as it was, so the batch is not stored half (and so not acknowledged at all).
                try? FileIO.truncateFile(state.descriptor, to: state.size, path: path)
                throw error
            }
            state.size += Int64(bytes.count)
            state.cachedTail.fileGrew(to: state.size, descriptor: state.descriptor)
        }
    }
}
