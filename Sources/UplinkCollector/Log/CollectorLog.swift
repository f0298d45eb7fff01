import Logging
import Synchronization
import UplinkCore

/// The collector's write-ahead log when `collector.sinks` is configured: `<dataDirectory>/log/`, a sequence of
/// segment files `<base>.jsonl`, where `<base>` (20 decimal digits) is the log offset of the segment's first byte.
///
/// Offsets are logical: a record at byte `p` of segment `b` is at offset `b + p`, and the log only grows, so an
/// offset names one position for the log's whole life. Each segment holds lines in the stored form of
/// `JSONLSink` (the received line with `agent` and `epoch` spliced in front), written through a `JSONLSink`, so
/// recovery and the marks ledger work on it as on `records.jsonl`: the ledger's size column is a log offset.
///
/// The storage thread appends (`write`); forwarders read what `committedEnd` says is whole; `LogRetention`
/// deletes closed segments. The active (last) segment is never deleted.
final class CollectorLog: AppendLog {
    /// A segment: its first offset and its file.
    struct Segment: Sendable, Equatable {
        var base: Int64
        var path: String
    }

    let directory: String
    let fsync: Bool
    /// Roll to a new segment before a write once the active one is this long, in bytes.
    let segmentBytes: Int64
    /// Roll to a new segment before a write once the active one is this old.
    let segmentAge: Duration

    private struct Active {
        var sink: JSONLSink
        var base: Int64
        var opened: ContinuousClock.Instant
    }
    /// The storage thread's state (the lock is never contended).
    private let active: Mutex<Active>
    /// Closed and active segments, oldest first; shared with forwarders and retention.
    private let segmentList: Mutex<[Segment]>
    /// The committed end; forwarders wait on it for new records.
    let committed: MonotonicSignal<Int64>
    /// Counts what retention looks at: a segment closed here, a forwarder's cursor persisted (`Forwarder`).
    let retentionChanges = MonotonicSignal<Int64>()

    private init(directory: String, segments: [Segment], active: JSONLSink, fsync: Bool, segmentBytes: Int64, segmentAge: Duration) {
        self.directory = directory
        self.fsync = fsync
        self.segmentBytes = segmentBytes
        self.segmentAge = segmentAge
        let base = segments.last!.base
        self.committed = MonotonicSignal(base + active.size)
        self.active = Mutex(Active(sink: active, base: base, opened: .now))
        self.segmentList = Mutex(segments)
    }

    /// The offset just past the last whole write: everything before it may be read.
    var committedEnd: Int64 { committed.value }

    /// The log's end offset (the marks ledger's size column).
    var size: Int64 { committedEnd }

    /// The segments, oldest first.
    var segments: [Segment] { segmentList.withLock { $0 } }

    /// Removes `segment` from the list (retention deleted its file). Never the active segment.
    func forget(_ segment: Segment) {
        segmentList.withLock { list in
            guard list.count > 1, list.last != segment else { return }
            list.removeAll { $0 == segment }
        }
    }

    /// Storage thread: appends the batches to the active segment, rolling first when it is full or old.
    func write(_ batches: [CollectorBatch]) throws {
        try active.withLock { active in
            let size = active.sink.size
            if size > 0, size >= segmentBytes || ContinuousClock.now - active.opened >= segmentAge {
                let base = active.base + size
                let path = CollectorLog.segmentPath(directory, base: base)
                let descriptor = try FileIO.openForAppending(path)
                if fsync { FileIO.syncDirectory(directory) }
                active = Active(sink: JSONLSink(path: path, descriptor: descriptor, size: 0, fsync: fsync), base: base, opened: .now)
                segmentList.withLock { $0.append(Segment(base: base, path: path)) }
                retentionChanges.bump()
            }
            try active.sink.write(batches)
            committed.advance(to: active.base + active.sink.size)
        }
    }

    static func segmentPath(_ directory: String, base: Int64) -> String {
        let digits = String(base)
        return directory + "/" + String(repeating: "0", count: max(0, 20 - digits.count)) + digits + ".jsonl"
    }

    /// The segment files in `directory`, oldest first (files that are not segments are left alone).
    static func listSegments(_ directory: String) throws(CollectorError) -> [Segment] {
        try FileIO.listDirectory(directory).compactMap { name -> Segment? in
            guard name.count == 26, name.hasSuffix(".jsonl"), let base = Int64(name.prefix(20)), base >= 0 else { return nil }
            return Segment(base: base, path: directory + "/" + name)
        }.sorted { $0.base < $1.base }
    }

    /// Opens the log in `directory` (creating it), recovering marks from the records past `ledgerOffset` like
    /// `StorageRecovery` does for `records.jsonl`, and truncating a torn last line of the last segment.
    static func recover(
        directory: String, ledgerOffset: Int64?, fsync: Bool, segmentBytes: Int64, segmentAge: Duration,
        maxLineBytes: Int, marks: inout [StreamKey: UInt64], logger: Logger
    ) throws(CollectorError) -> CollectorLog {
        try FileIO.makeDirectories(directory)
        var segments = try listSegments(directory)
        if segments.isEmpty {
            // A new log continues the offsets of the ledger, so its size column stays monotonic.
            let base = ledgerOffset ?? 0
            let path = segmentPath(directory, base: base)
            FileIO.closeFile(try FileIO.openForAppending(path))
            segments = [Segment(base: base, path: path)]
        }
        let start = ledgerOffset ?? 0
        var activeSize: Int64 = 0
        for (index, segment) in segments.enumerated() {
            let isLast = index == segments.count - 1
            guard let descriptor = try FileIO.openForUpdate(segment.path, create: isLast) else { continue }
            defer { FileIO.closeFile(descriptor) }
            let size = try FileIO.fileSize(descriptor, path: segment.path)
            guard segment.base + size > start || isLast else { continue }
            let from = max(0, start - segment.base)
            let tail = try StorageRecovery.scanRecords(
                descriptor, path: segment.path, from: min(from, size), to: size, maxLineBytes: maxLineBytes, marks: &marks,
                logger: logger)
            if tail > 0 && isLast {
                logger.warning(
                    "Removing an unterminated last line from the log (a write cut off by a crash; never acknowledged)",
                    metadata: ["file": "\(segment.path)", "bytes": "\(tail)"])
                try FileIO.truncateFile(descriptor, to: size - Int64(tail), path: segment.path)
            }
            if isLast { activeSize = size - Int64(tail) }
        }
        let last = segments.last!
        let descriptor = try FileIO.openForAppending(last.path)
        let sink = JSONLSink(path: last.path, descriptor: descriptor, size: activeSize, fsync: fsync)
        return CollectorLog(
            directory: directory, segments: segments, active: sink, fsync: fsync, segmentBytes: segmentBytes,
            segmentAge: segmentAge)
    }
}

/// A sink that is an append-only file whose length the marks ledger records: `JSONLSink` or `CollectorLog`.
protocol AppendLog: CollectorSink {
    /// The end offset after the last write.
    var size: Int64 { get }
}

extension JSONLSink: AppendLog {}
