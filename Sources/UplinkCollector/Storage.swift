import Logging
import NIOCore
import NIOPosix
import Synchronization
import UplinkCore
import UplinkWire

/// The collector's writes on the record path, on one dedicated thread (never on the cooperative pool): the log
/// (`CollectorLog`, which forwarders then read for the sinks), the marks ledger and the rejects file.
///
/// Streams hand in their batches with `commit(_:)`; the storage thread takes everything that queued up meanwhile
/// as one group (group commit): one write to the log, then one ledger append, then it raises the marks and
/// resumes the waiting streams, which only then acknowledge. A stream's batches are committed in order because
/// a stream waits for each commit before reading on.
final class Storage: Sendable {
    /// What one stream hands in for one received chunk.
    struct Commit: Sendable {
        /// Accepted records, nil when there are none.
        var batch: CollectorBatch?
        /// Lines to note in the rejects file.
        var rejects: [RejectNote]
    }

    private struct Pending {
        var commit: Commit
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct Queue {
        var pending: [Pending] = []
        var draining = false
    }

    /// State only the storage thread touches (the lock is never contended).
    private struct Files {
        var ledger: MarksLedger
        var rejectsDescriptor: Int32
    }

    private let pool: NIOThreadPool
    private let queue = Mutex(Queue())
    private let files: Mutex<Files>
    /// The write-ahead log: every accepted record is written here once; the ledger's size column is its end offset.
    let log: CollectorLog
    private let marks: MarkTable
    private let recorder: StatisticsRecorder
    private let logger: Logger
    private let rejectsPath: String
    private let maxLineBytes: Int

    private init(
        pool: NIOThreadPool, recovered: sending StorageRecovery.Recovered, configuration: CollectorConfiguration,
        marks: MarkTable, recorder: StatisticsRecorder, logger: Logger
    ) {
        self.pool = pool
        let recoveredMarks = recovered.marks
        self.log = recovered.log
        self.files = Mutex(Files(ledger: recovered.ledger, rejectsDescriptor: recovered.rejectsDescriptor))
        self.marks = marks
        self.recorder = recorder
        self.logger = logger
        self.rejectsPath = configuration.resolvedRejectsFile
        self.maxLineBytes = configuration.maxLineBytes
        marks.replaceAll(with: recoveredMarks)
    }

    deinit {
        files.withLock { FileIO.closeFile($0.rejectsDescriptor) }
    }

    /// Starts the storage thread and recovers the marks (see `StorageRecovery`).
    static func open(
        configuration: CollectorConfiguration, marks: MarkTable, recorder: StatisticsRecorder, logger: Logger
    ) async throws -> Storage {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        do {
            return try await pool.runIfActive {
                let recovered = try StorageRecovery.recover(configuration, logger: logger)
                return Storage(
                    pool: pool, recovered: recovered, configuration: configuration, marks: marks, recorder: recorder,
                    logger: logger)
            }
        } catch {
            try? await pool.shutdownGracefully()
            throw error
        }
    }

    /// Stops the storage thread once queued work is done.
    func close() async {
        try? await pool.shutdownGracefully()
    }

    /// Stores `commit` and returns once its records are in the log and its mark is in the ledger and the mark
    /// table. Throws when the records could not be stored; they must not be acknowledged then.
    func commit(_ commit: Commit) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let startDraining = queue.withLock { queue in
                queue.pending.append(Pending(commit: commit, continuation: continuation))
                if queue.draining { return false }
                queue.draining = true
                return true
            }
            if startDraining {
                pool.submit { state in
                    switch state {
                    case .active: self.drain()
                    case .cancelled: self.failPending()
                    }
                }
            }
        }
    }

    /// Whether the last group of records could not be stored (the collector is then not ready: `/readyz`).
    var isFailing: Bool { failing.load(ordering: .relaxed) }
    private let failing = Atomic(false)

    /// Storage thread: commits groups until the queue is empty.
    private func drain() {
        while true {
            let work = queue.withLock { queue -> [Pending] in
                if queue.pending.isEmpty {
                    queue.draining = false
                    return []
                }
                defer { queue.pending = [] }
                return queue.pending
            }
            if work.isEmpty { return }
            let failure = files.withLock { files in store(work.map(\.commit), files: &files) }
            if work.contains(where: { $0.commit.batch != nil }) { failing.store(failure != nil, ordering: .relaxed) }
            for pending in work {
                if let failure, pending.commit.batch != nil {
                    pending.continuation.resume(throwing: failure)
                } else {
                    pending.continuation.resume()
                }
            }
        }
    }

    private func failPending() {
        let work = queue.withLock { queue -> [Pending] in
            queue.draining = false
            defer { queue.pending = [] }
            return queue.pending
        }
        for pending in work {
            pending.continuation.resume(throwing: CollectorError(code: "shutting_down", message: "the collector's storage is closed"))
        }
    }

    /// Storage thread: one group. Returns the error that keeps the group's records from being acknowledged.
    private func store(_ commits: [Commit], files: inout Files) -> (any Error)? {
        var failure: (any Error)?
        let batches = commits.compactMap(\.batch)
        if !batches.isEmpty {
            do {
                try log.write(batches)
                advanceMarks(batches, files: &files)
            } catch {
                logger.error("Could not store records; they will not be acknowledged", metadata: ["error": "\(error)"])
                failure = error
            }
        }
        writeRejects(commits, files: &files)
        return failure
    }

    /// Storage thread: ledger append, then the mark table. A failed append does not fail the group: the records
    /// are in the log, which recovery scans from the ledger's last offset.
    private func advanceMarks(_ batches: [CollectorBatch], files: inout Files) {
        var entries = batches.map { ($0.stream, $0.highestSequence) }
        for batch in batches {
            for (id, offset) in batch.origins { entries.append((StreamKey.origin(agent: batch.stream.agent, id: id), offset)) }
        }
        let logEnd = log.committedEnd
        do {
            if files.ledger.needsCompaction {
                marks.raise(entries)
                try files.ledger.compact(marks: marks.snapshot(), recordsSize: logEnd)
                return
            }
            try files.ledger.append(entries, recordsSize: logEnd)
        } catch {
            logger.error("Could not write the marks ledger", metadata: ["file": "\(files.ledger.path)", "error": "\(error)"])
        }
        marks.raise(entries)
        if files.ledger.shouldCompact {
            do {
                try files.ledger.compact(marks: marks.snapshot(), recordsSize: logEnd)
            } catch {
                logger.error("Could not compact the marks ledger", metadata: ["file": "\(files.ledger.path)", "error": "\(error)"])
            }
        }
    }

    /// Storage thread: one JSON line per reject.
    private func writeRejects(_ commits: [Commit], files: inout Files) {
        var bytes: [UInt8] = []
        let now = WallClock.nowNanoseconds()
        for commit in commits {
            for note in commit.rejects { appendReject(note, time: now, to: &bytes) }
        }
        guard !bytes.isEmpty else { return }
        do {
            try FileIO.writeAll(files.rejectsDescriptor, bytes, path: rejectsPath)
        } catch {
            recorder.sinkError()
            logger.error("Could not write the rejects file", metadata: ["file": "\(rejectsPath)", "error": "\(error)"])
        }
    }

    /// `{"time":"…","agent":"…","epoch":E,"code":"…","message":"…",` then `"offset":N,"line":"…"}` for malformed
    /// lines or `"length":N}` for too-long and cut-off lines (whose content is not kept).
    private func appendReject(_ note: RejectNote, time: Int64, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"time":""#.utf8)
        UTCTimestamp.append(nanoseconds: time, to: &bytes)
        bytes.append(contentsOf: #"","agent":"#.utf8)
        WireLineWriter.appendJSONString(note.stream.agent, to: &bytes)
        bytes.append(contentsOf: #","epoch":"#.utf8)
        bytes.append(contentsOf: String(note.stream.epoch).utf8)
        bytes.append(contentsOf: #","code":"#.utf8)
        WireLineWriter.appendJSONString(note.code, to: &bytes)
        bytes.append(contentsOf: #","message":"#.utf8)
        switch note.kind {
        case .malformed(let error, let line):
            WireLineWriter.appendJSONString(error.message, to: &bytes)
            bytes.append(contentsOf: #","offset":"#.utf8)
            bytes.append(contentsOf: String(error.offset).utf8)
            bytes.append(contentsOf: #","line":"#.utf8)
            line.withUnsafeReadableBytes { WireLineWriter.appendJSONString(bytes: $0, to: &bytes) }
        case .tooLong(let length):
            WireLineWriter.appendJSONString("line of \(length) bytes is longer than max_line_bytes (\(maxLineBytes))", to: &bytes)
            bytes.append(contentsOf: #","length":"#.utf8)
            bytes.append(contentsOf: String(length).utf8)
        case .truncated(let length):
            WireLineWriter.appendJSONString("the request ended inside a line (\(length) bytes without a newline)", to: &bytes)
            bytes.append(contentsOf: #","length":"#.utf8)
            bytes.append(contentsOf: String(length).utf8)
        }
        bytes.append(contentsOf: "}\n".utf8)
    }
}
