import Logging
import Synchronization
import UplinkCore
import UplinkFiles

/// The collector's write-ahead log: every accepted record is appended here, in its stored form (`StoredLine`),
/// by the storage thread; agents are acknowledged once it is written; forwarders read it for the sinks.
///
/// Two layouts (`Layout`), chosen by the configuration:
///
/// - `single`: one file that is the whole log, never rolled and never deleted: `<data_dir>/records.jsonl` when
///   `collector.jsonl` is on and there are no `collector.sinks`, so that the records file a user reads is the log
///   itself and every record is written to disk once;
/// - `segments`: `<data_dir>/log/`, a sequence of segment files `<base>.jsonl`, where `<base>` (20 decimal
///   digits) is the log offset of the segment's first byte; segments roll by size and age, and `LogRetention`
///   deletes closed ones.
///
/// Offsets are logical: a record at byte `p` of segment `b` is at offset `b + p` (the single file has base 0), and
/// the log only grows, so an offset names one position for the log's whole life. The marks ledger's size column
/// is a log offset, and start-up recovery scans the log past it.
///
/// The storage thread appends (`write`); forwarders read what `committedEnd` says is whole; `LogRetention`
/// deletes closed segments. The active (last) segment is never deleted.
final class CollectorLog: Sendable {
    /// A segment: its first offset and its file.
    struct Segment: Sendable, Equatable {
        var base: Int64
        var path: String
    }

    /// Where the log's files are.
    enum Layout: Sendable, Equatable {
        /// One file, base 0, never rolled or deleted.
        case single(path: String)
        /// Segment files `<base>.jsonl` in a directory.
        case segments(directory: String)
    }

    let layout: Layout
    let fsync: Bool
    /// Roll to a new segment before a write once the active one is this long, in bytes.
    let segmentBytes: Int64
    /// Roll to a new segment before a write once the active one is this old.
    let segmentAge: Duration

    private struct Active {
        var writer: LogSegmentWriter
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

    private init(layout: Layout, segments: [Segment], active: LogSegmentWriter, fsync: Bool, segmentBytes: Int64, segmentAge: Duration) {
        self.layout = layout
        self.fsync = fsync
        self.segmentBytes = segmentBytes
        self.segmentAge = segmentAge
        let base = segments.last!.base
        self.committed = MonotonicSignal(base + active.size)
        self.active = Mutex(Active(writer: active, base: base, opened: .now))
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

    /// Whether a write of about `bytes` may wait for the device: `fsync` is on, the active segment is due to roll
    /// (a new file, with a directory `fsync` when on), or the write crosses a step of the page cache's writeback.
    func writeMayWait(bytes: Int) -> Bool {
        active.withLock { active in dueToRoll(active) || active.writer.writeMayWait(bytes: bytes) }
    }

    /// Whether the next write rolls to a new segment first: the active one is full or old (never in `single`).
    private func dueToRoll(_ active: Active) -> Bool {
        guard case .segments = layout else { return false }
        let size = active.writer.size
        return size > 0 && (size >= segmentBytes || ContinuousClock.now - active.opened >= segmentAge)
    }

    /// Storage thread: appends the batches to the active segment, rolling first when it is full or old (never in
    /// the `single` layout); `beforeRolling` runs just before a roll, while the segment being closed is still the
    /// last. Throws when they could not be written; the log is then as it was.
    func write(_ batches: [CollectorBatch], beforeRolling: () -> Void = {}) throws(CollectorError) {
        try active.withLock { active throws(CollectorError) in
            if case .segments(let directory) = layout, dueToRoll(active) {
                beforeRolling()
                let base = active.base + active.writer.size
                let path = CollectorLog.segmentPath(directory, base: base)
                let descriptor = try FileIO.openForAppending(path)
                if fsync { FileIO.syncDirectory(directory) }
                active = Active(
                    writer: LogSegmentWriter(path: path, descriptor: descriptor, size: 0, fsync: fsync), base: base, opened: .now)
                segmentList.withLock { $0.append(Segment(base: base, path: path)) }
                retentionChanges.bump()
            }
            try active.writer.write(batches)
            committed.advance(to: active.base + active.writer.size)
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

    /// Opens the log (creating its file or directory), raising `marks` with the records past `ledgerOffset` (written
    /// but not yet ledgered when the previous process stopped) and truncating a torn last line of the last segment.
    /// A `single` log is its file from offset 0; a ledger offset past its end (the ledger of another layout) scans
    /// nothing.
    static func recover(
        _ layout: Layout, ledgerOffset: Int64?, fsync: Bool, segmentBytes: Int64, segmentAge: Duration,
        maxLineBytes: Int, marks: inout [StreamKey: UInt64], logger: Logger
    ) throws(CollectorError) -> CollectorLog {
        var segments: [Segment]
        switch layout {
        case .single(let path):
            try FileIO.makeDirectories(AtomicFile.parentDirectory(of: path))
            segments = [Segment(base: 0, path: path)]
        case .segments(let directory):
            try FileIO.makeDirectories(directory)
            segments = try listSegments(directory)
            if segments.isEmpty {
                // A new log continues the offsets of the ledger, so its size column stays monotonic.
                let base = ledgerOffset ?? 0
                let path = segmentPath(directory, base: base)
                FileIO.closeFile(try FileIO.openForAppending(path))
                segments = [Segment(base: base, path: path)]
            }
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
        let writer = LogSegmentWriter(path: last.path, descriptor: descriptor, size: activeSize, fsync: fsync)
        return CollectorLog(
            layout: layout, segments: segments, active: writer, fsync: fsync, segmentBytes: segmentBytes,
            segmentAge: segmentAge)
    }
}
