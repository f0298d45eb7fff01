import NIOCore
import NIOPosix

/// `type: jsonl`: appends the log's stored lines, unchanged, to `path` (default `<data_dir>/records.jsonl`), the
/// same form the collector writes without `sinks`. After a crash the last batch may be appended twice (the cursor
/// is persisted after the write); readers deduplicate on (agent, epoch, seq).
struct JSONLForwardingSink: ForwardingSink {
    let path: String

    init(path: String) throws(CollectorError) {
        self.path = path
        try FileIO.makeDirectories(FileIO.directory(of: path))
    }

    func deliver(_ batch: ForwardBatch) async throws(SinkFailure) {
        let path = self.path
        do {
            try await NIOThreadPool.singleton.runIfActive {
                let descriptor = try FileIO.openForAppending(path)
                defer { FileIO.closeFile(descriptor) }
                try batch.lines.withUnsafeReadableBytes { raw in
                    try Result { () throws(CollectorError) in try FileIO.writeAll(descriptor, raw, path: path) }.get()
                }
            }
        } catch {
            throw SinkFailure(.retry, "\(error)")
        }
    }
}
