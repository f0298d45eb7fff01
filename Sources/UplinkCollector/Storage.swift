import Logging
import NIOCore
import NIOPosix
import CLinuxIO
import Synchronization
import UplinkCore
import UplinkWire

/// The collector's writes on the record path, on one dedicated thread (never on the cooperative pool): the log
/// (`CollectorLog`, which forwarders then read for the sinks), the marks ledger and the rejects file.
///
/// Streams hand in their batches with `commit(_:completion:)`; the storage thread takes everything that queued up
/// meanwhile as one group (group commit): one write to the log, then it raises the marks (the marks ledger follows
/// every `ledgerLagBytes` of log) and calls back the waiting streams, which only then acknowledge. A stream's
/// batches are committed in order because a stream commits its next batch only once the previous one is stored.
///
/// A small commit that finds the storage idle is stored as a group of its own on the calling thread (the stream's
/// event loop) when nothing in it can wait for the device: `collector.fsync` off, no segment to roll, no step of the
/// page cache's writeback, no ledger rewrite due. That is the common case at ordinary rates (a few lines per chunk),
/// and it saves the two thread hand-offs per chunk (to the storage thread and back). Whatever may wait, and anything
/// that queued meanwhile, goes to the storage thread as before.
///
/// A buffered write that nothing foresees waiting can still sleep in the kernel: when the machine's dirty pages pass
/// the kernel's limit it throttles every writer, and a journal commit can hold a write briefly. So every store that
/// was foreseen not to wait checks whether its thread slept during it (a voluntary context switch); if it did, small
/// commits go to the storage thread for `inlineHoldOff`, and a loop is held by at most one such write per hold-off.
/// What the inline store saves and how often such writes sleep, measured: docs/architecture.md, "The collector's
/// per-record path".
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
        var completion: @Sendable (Result<Void, any Error>) -> Void
    }

    private struct Queue {
        var pending: [Pending] = []
        var draining = false
    }

    /// State only the storage thread touches (the lock is never contended).
    private struct Files {
        var ledger: MarksLedger
        var rejectsDescriptor: Int32
        /// Marks raised since the last ledger line was written, newest per stream and origin.
        var unledgered = UnledgeredMarks()
        /// The log offset on the ledger's last line: recovery scans the log from here.
        var ledgeredEnd: Int64
    }

    /// How far the log may run ahead of the marks ledger, in bytes: the most a start-up after a crash scans to raise
    /// the marks of records not in the ledger (a few milliseconds). Below it a group's marks wait in memory, so a
    /// trickle of small groups costs one log write each instead of a log write and a ledger write (and, with
    /// `collector.fsync`, one `fsync` instead of two). The ledger is also written before the log rolls to a new
    /// segment (so a segment that retention may delete never holds records the ledger lacks) and when the
    /// collector stops.
    static let ledgerLagBytes: Int64 = 1 << 20

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
    /// The time, for the hold-off after a store slept (tests pass their own).
    private let now: @Sendable () -> ContinuousClock.Instant
    /// Until when small commits are not stored on the calling thread, because a store slept in the kernel.
    private let inlineHeldUntil = Mutex<ContinuousClock.Instant?>(nil)

    private init(
        pool: NIOThreadPool, recovered: sending StorageRecovery.Recovered, configuration: CollectorConfiguration,
        marks: MarkTable, recorder: StatisticsRecorder, logger: Logger, now: @escaping @Sendable () -> ContinuousClock.Instant
    ) {
        self.pool = pool
        self.now = now
        let recoveredMarks = recovered.marks
        self.log = recovered.log
        self.files = Mutex(
            Files(ledger: recovered.ledger, rejectsDescriptor: recovered.rejectsDescriptor, ledgeredEnd: recovered.log.committedEnd))
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
        configuration: CollectorConfiguration, marks: MarkTable, recorder: StatisticsRecorder, logger: Logger,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }
    ) async throws -> Storage {
        let pool = NIOThreadPool(numberOfThreads: 1)
        pool.start()
        do {
            return try await pool.runIfActive {
                let recovered = try StorageRecovery.recover(configuration, logger: logger)
                return Storage(
                    pool: pool, recovered: recovered, configuration: configuration, marks: marks, recorder: recorder,
                    logger: logger, now: now)
            }
        } catch {
            try? await pool.shutdownGracefully()
            throw error
        }
    }

    /// Stops the storage thread once queued work is done, then writes the marks still missing from the ledger.
    func close() async {
        closed.store(true, ordering: .sequentiallyConsistent)
        try? await pool.shutdownGracefully()
        files.withLock { files in writeLedger(&files, recordsSize: log.committedEnd) }
    }

    /// Set by `close()`: later commits go to the (stopped) pool, which refuses them.
    private let closed = Atomic(false)

    /// The largest commit, in bytes of stored lines, that may be stored on the calling thread: what a trickling
    /// stream sends per chunk (a few dozen lines at most). A bulk chunk goes to the storage thread, so its stream's
    /// loop reads and checks the next one while it is written.
    static let inlineCommitBytes = 16 << 10

    /// How long small commits are stored on the storage thread only, after a store slept in the kernel.
    static let inlineHoldOff = Duration.seconds(10)

    /// Stores `commit` and calls `completion` once its records are in the log and its mark in the mark table (the
    /// ledger follows, see `ledgerLagBytes`): before this returns when the calling thread stored it
    /// (`mayStoreHere`), else later on the storage thread. A failure means the records could not be stored; they must
    /// not be acknowledged then.
    func commit(_ commit: Commit, completion: @escaping @Sendable (Result<Void, any Error>) -> Void) {
        let startDraining = queue.withLock { queue in
            queue.pending.append(Pending(commit: commit, completion: completion))
            if queue.draining { return false }
            queue.draining = true
            return true
        }
        guard startDraining else { return }
        if mayStoreHere(commit) {
            storeQueuedGroup(foreseenNotToWait: true, onlyTheFirst: true)
            groupsStoredByCaller.add(1, ordering: .relaxed)
            if finishDraining() { return }
        }
        pool.submit { state in
            switch state {
            case .active: self.drain()
            case .cancelled: self.failPending()
            }
        }
    }

    /// Whether a commit of `bytes` of stored lines is of the kind stored on the calling thread when it finds the
    /// storage idle: small, `collector.fsync` off, no store slept lately (the cheap half of `mayStoreHere`). A
    /// commit that must wait for the device after all (a roll, a writeback step) still goes to the storage thread.
    private func prefersCaller(bytes: Int) -> Bool {
        bytes <= Self.inlineCommitBytes && !log.fsync && !closed.load(ordering: .relaxed) && !isInlineHeld
    }

    /// Whether `commit`, the only one queued, may be stored on the calling thread: it is small and nothing its
    /// group does can wait for the device. Called by the drainer, so the storage thread's state holds still.
    private func mayStoreHere(_ commit: Commit) -> Bool {
        let batches = commit.batch.map { [$0] } ?? []
        let bytes = Self.maximumStoredBytes(batches)
        return prefersCaller(bytes: bytes) && isForeseenNotToWait(batches, bytes: bytes)
    }

    /// At most how many bytes of stored lines `batches` make.
    private static func maximumStoredBytes(_ batches: [CollectorBatch]) -> Int {
        batches.reduce(0) { $0 + StoredLine.maximumStoredBytes(of: $1) }
    }

    /// Whether storing `batches` (at most `bytes` of stored lines) as one group can wait for nothing the storage
    /// foresees: no `fsync`, no segment roll, no writeback step, no ledger rewrite. Called by the drainer.
    private func isForeseenNotToWait(_ batches: [CollectorBatch], bytes: Int) -> Bool {
        guard !log.writeMayWait(bytes: bytes) else { return false }
        let entries = batches.reduce(0) { $0 + 1 + $1.origins.count }
        return files.withLock { files in
            let ledgerBytes = (files.unledgered.count + entries) * MarksLedger.maximumLineBytes
            return !files.ledger.appendMayWait(bytes: ledgerBytes)
        }
    }

    /// Whether small commits go to the storage thread only, for now (a store slept less than `inlineHoldOff` ago).
    var isInlineHeld: Bool {
        inlineHeldUntil.withLock { until in
            guard let held = until else { return false }
            if now() < held { return true }
            until = nil
            return false
        }
    }

    /// A store that was foreseen not to wait slept in the kernel: keep small commits off the loops for a while.
    func storeSlept() {
        let until = now() + Self.inlineHoldOff
        let wasHeld = inlineHeldUntil.withLock { held in
            defer { held = until }
            return held != nil
        }
        storesThatSlept.add(1, ordering: .relaxed)
        if !wasHeld {
            logger.info("A write to the log slept in the kernel (a busy device, or the kernel throttling writers); small commits are stored on the storage thread for a while", metadata: ["seconds": "\(Self.inlineHoldOff.components.seconds)"])
        }
    }

    /// Whether the last group of records could not be stored (the collector is then not ready: `/readyz`).
    var isFailing: Bool { failing.load(ordering: .relaxed) }
    private let failing = Atomic(false)

    /// Storage thread: commits groups until the queue is empty.
    private func drain() {
        repeat {
            storeQueuedGroup(foreseenNotToWait: nil, onlyTheFirst: false)
            groupsStoredByThread.add(1, ordering: .relaxed)
        } while !finishDraining()
    }

    /// How many groups were stored on a committing stream's thread and how many on the storage thread, and how
    /// many stores slept although nothing foresaw it (tests and measurements read it).
    var storedGroups: (byCaller: Int, byThread: Int, slept: Int) {
        (groupsStoredByCaller.load(ordering: .relaxed), groupsStoredByThread.load(ordering: .relaxed),
         storesThatSlept.load(ordering: .relaxed))
    }
    private let groupsStoredByCaller = Atomic(0)
    private let groupsStoredByThread = Atomic(0)
    private let storesThatSlept = Atomic(0)

    /// The drainer (the storage thread, or a caller storing its own commit): stores everything queued as one group
    /// and resumes its streams. `foreseenNotToWait`: already known (the caller's own commit), or nil to find out.
    /// `onlyTheFirst`: the caller stores only its own commit, the first queued; what other streams queued meanwhile
    /// was not checked and goes to the storage thread.
    private func storeQueuedGroup(foreseenNotToWait: Bool?, onlyTheFirst: Bool) {
        let work = queue.withLock { queue -> [Pending] in
            if onlyTheFirst, !queue.pending.isEmpty { return [queue.pending.removeFirst()] }
            defer { queue.pending = [] }
            return queue.pending
        }
        if work.isEmpty { return }
        let commits = work.map(\.commit)
        // Only a store that nothing foresaw waiting tells whether writes sleep unforeseen.
        let watched = foreseenNotToWait ?? {
            let batches = commits.compactMap(\.batch)
            return isForeseenNotToWait(batches, bytes: Self.maximumStoredBytes(batches))
        }()
        let switchesBefore = watched ? uplink_thread_voluntary_switches() : -1
        let failure = files.withLock { files in store(commits, files: &files) }
        if switchesBefore >= 0, uplink_thread_voluntary_switches() > switchesBefore { storeSlept() }
        if work.contains(where: { $0.commit.batch != nil }) { failing.store(failure != nil, ordering: .relaxed) }
        for pending in work {
            if let failure, pending.commit.batch != nil {
                pending.completion(.failure(failure))
            } else {
                pending.completion(.success(()))
            }
        }
    }

    /// The drainer stops when nothing more is queued; false: more was queued meanwhile, go on.
    private func finishDraining() -> Bool {
        queue.withLock { queue in
            guard queue.pending.isEmpty else { return false }
            queue.draining = false
            return true
        }
    }

    private func failPending() {
        let work = queue.withLock { queue -> [Pending] in
            queue.draining = false
            defer { queue.pending = [] }
            return queue.pending
        }
        for pending in work {
            pending.completion(.failure(CollectorError(code: "shutting_down", message: "the collector's storage is closed")))
        }
    }

    /// Storage thread: one group. Returns the error that keeps the group's records from being acknowledged.
    private func store(_ commits: [Commit], files: inout Files) -> (any Error)? {
        var failure: (any Error)?
        let batches = commits.compactMap(\.batch)
        if !batches.isEmpty {
            do {
                let endBefore = log.committedEnd
                try log.write(batches) { writeLedger(&files, recordsSize: endBefore) }
                advanceMarks(batches, files: &files)
            } catch {
                logger.error("Could not store records; they will not be acknowledged", metadata: ["error": "\(error)"])
                failure = error
            }
        }
        writeRejects(commits, files: &files)
        return failure
    }

    /// Storage thread: raises the mark table and keeps the new marks for the ledger, which is written once the log
    /// has run `ledgerLagBytes` ahead of it, or rewritten whole when that is due.
    private func advanceMarks(_ batches: [CollectorBatch], files: inout Files) {
        marks.raise(batches)
        for batch in batches { files.unledgered.raise(batch) }
        let logEnd = log.committedEnd
        if files.ledger.shouldCompact || logEnd - files.ledgeredEnd >= Self.ledgerLagBytes {
            writeLedger(&files, recordsSize: logEnd)
        }
    }

    /// Storage thread: appends the marks not yet in the ledger with the log offset `recordsSize` (the end of the
    /// records they belong to), or rewrites the ledger from the mark table when that is due (it grew too long, or a
    /// write failed). A failed write does not fail anything: the records are in the log, which recovery scans from
    /// the ledger's last offset, and the next group tries again.
    private func writeLedger(_ files: inout Files, recordsSize: Int64) {
        do {
            if files.ledger.shouldCompact {
                try files.ledger.compact(marks: marks.snapshot(), recordsSize: recordsSize)
            } else {
                guard !files.unledgered.isEmpty else { return }
                try files.ledger.append(files.unledgered.sortedEntries(), recordsSize: recordsSize)
            }
            files.unledgered.removeAll(keepingCapacity: true)
            files.ledgeredEnd = recordsSize
        } catch {
            logger.error("Could not write the marks ledger", metadata: ["file": "\(files.ledger.path)", "error": "\(error)"])
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
