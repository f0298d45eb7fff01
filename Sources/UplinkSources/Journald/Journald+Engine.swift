import CSystemd
import Logging
import UplinkCore
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The running state of one `journald` source. Used only by the source's task; the watcher thread and the wakeup are
/// the parts shared with other threads.
///
/// One turn of the loop: read up to `entriesPerTurn` entries (in batches handed to the sink, waiting for space),
/// advance the checkpoint to the last acknowledged batch, write it when due. When the journal has nothing more it
/// waits for the watcher (the journal changed), an acknowledgement of entries sent, the checkpoint's due time, or
/// cancellation, then lets sd-journal process the change.
final class JournaldEngine {
    let name: String
    let config: JournaldConfig
    let sink: any RecordSink
    let logger: Logger
    /// nil: the cursor is kept in memory only.
    let checkpointPath: String?
    let journal: JournaldJournal
    let wakeup: SourceWakeup
    /// Healthy once the journal is open, watched and positioned (`run`).
    let health: SourceHealth
    /// What the checkpoint interval and the read-error retry are measured on and waited out with.
    let clock: any TickClock
    var watcher: JournaldWatcher?

    var batch: LogLineBatch
    /// The cursor of the batch's last entry (empty: none), and of the entry being read.
    var batchCursor: [UInt8] = []
    var entryCursor: [UInt8] = []
    /// Message bytes of the entry being read (copied out of sd-journal's mapping, cut to `max_line_bytes`).
    var message: [UInt8] = []

    /// Batches sent and not acknowledged yet, as the highest sequence of each, the cursor of its last entry and its
    /// messages' bytes, oldest first from `pendingHead`.
    var pending: [(sequence: UInt64, cursor: String, bytes: Int)] = []
    var pendingHead = 0
    /// The last entry acknowledged (or, at a first start at `now`, the last entry there was): the checkpoint.
    var acknowledgedCursor: String?
    /// The cursor in the checkpoint file.
    var writtenCursor: String?
    /// When the checkpoint is written (`checkpoint_interval`; a trickle of acknowledgements less often).
    var checkpointSchedule: CheckpointSchedule
    var checkpointWriteReport = CheckpointWriteReport()
    /// After a checkpoint load: the entry it names is skipped when the journal still has it.
    var skipCursor: String?

    var lastAppendedSequence: UInt64 = 0
    /// Set when the sink dropped entries: the task was cancelled.
    var stopped = false
    /// When a read error happened: the next attempt waits for a change or `readErrorRetry`.
    var readErrorAt: ContinuousClock.Instant?
    var warnedReadError = false
    var warnedOversize = false
    var statistics = JournaldStatistics()

    /// Entries in one batch handed to the sink, at most.
    static let batchEntries = 512
    /// Message bytes in one batch, at most (a batch ends after the entry that passes it).
    static let batchBytes = 256 * 1024
    /// Entries read before other tasks get a turn.
    static let entriesPerTurn = 4096
    /// How long after a read error the journal is read again without a change.
    static let readErrorRetry: Duration = .seconds(1)
    /// An idle wait with nothing due ends after this long anyway (then it starts again): not a poll, a bound.
    static let longestIdleWait: Duration = .seconds(3600)

    init(name: String, config: JournaldConfig, context: SourceContext, clock: any TickClock) throws {
        self.name = name
        self.config = config
        self.clock = clock
        wakeup = SourceWakeup(clock: clock)
        sink = context.sink
        logger = context.logger
        if let stateDirectory = context.stateDirectory {
            let path = JournaldCheckpointFile.path(stateDirectory: stateDirectory, sourceName: name)
            let directory = AtomicFile.parentDirectory(of: path)
            if let error = SourceFiles.makeDirectories(directory) {
                throw SourceError("journald source '\(name)': cannot create the checkpoint directory \(directory): \(error)")
            }
            checkpointPath = path
        } else {
            checkpointPath = nil
        }
        if let directory = config.directory, !SourceFiles.isDirectory(directory) {
            throw SourceError("journald source '\(name)': the journal directory \(directory) does not exist or is not a directory")
        }
        switch JournaldJournal.open(directory: config.directory) {
        case .success(let journal): self.journal = journal
        case .failure(let error): throw SourceError("journald source '\(name)': \(error)")
        }
        for match in Self.matches(config) {
            let result = journal.addMatch(Array(match.utf8))
            if result < 0 {
                throw SourceError("journald source '\(name)': cannot add the match \(match): \(JournaldJournal.errorText(result))")
            }
        }
        health = context.health
        batch = LogLineBatch(source: name, fields: [], originID: 0)
        checkpointSchedule = CheckpointSchedule(interval: config.checkpointInterval, now: clock.now)
    }

    /// The sd-journal matches of a configuration: units, then `matches`, then the priority levels.
    static func matches(_ config: JournaldConfig) -> [String] {
        var matches = config.units.map { "_SYSTEMD_UNIT=" + JournaldConfig.unitName($0) }
        matches += config.matches.map { "\($0.field)=\($0.value)" }
        if let priority = config.priority {
            matches += (0...priority.rawValue).map { "PRIORITY=\($0)" }
        }
        return matches
    }

    // MARK: The loop

    func run() async {
        // The descriptor first: sd-journal watches from here on, so nothing appended while positioning is missed.
        let descriptor = journal.descriptor()
        if descriptor < 0 {
            logger.warning(
                "journald source: cannot watch the journal for changes (\(JournaldJournal.errorText(descriptor))); reading it only at start and on acknowledgements"
            )
        } else {
            switch JournaldWatcher.make(journalFD: descriptor, wakeup: wakeup) {
            case .success(let watcher):
                watcher.start()
                self.watcher = watcher
            case .failure(let error):
                logger.warning("journald source: cannot watch the journal for changes (\(error))")
            }
        }
        position()
        // The journal is open, watched and positioned: the source works, whether or not entries come, and whatever is
        // appended from now on is read.
        health.succeeded()
        await writeCheckpoint(force: true)
        while !Task.isCancelled, !stopped {
            let more = await readSome()
            if Task.isCancelled || stopped { break }
            acknowledge()
            await writeCheckpoint(force: false)
            if more {
                // Busy with a backlog: still take the journal's changes (files added or removed) now and then.
                takeChanges()
                await Task.yield()
                continue
            }
            await idle()
            takeChanges()
        }
        await shutdown()
    }

    /// Puts the journal's read position where this start begins: after the checkpoint's entry, or where `since` says.
    private func position() {
        if let cursor = loadCheckpoint() {
            let result = journal.seekCursor(cursor)
            if result >= 0 {
                acknowledgedCursor = cursor
                writtenCursor = cursor
                skipCursor = cursor
                logger.debug("journald source: resuming after the checkpoint's entry", metadata: ["cursor": "\(cursor)"])
                return
            }
            logger.warning(
                "journald source: the journal does not take the checkpoint's cursor (\(JournaldJournal.errorText(result))); starting as on a first start (since)"
            )
        }
        switch config.since {
        case .beginning:
            _ = journal.seekHead()
        case .time(let microseconds):
            _ = journal.seekRealtime(microseconds: UInt64(max(0, microseconds)))
        case .ago(let duration):
            let now = WallClock.nowNanoseconds() / 1000
            let back = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
            _ = journal.seekRealtime(microseconds: UInt64(max(0, now - back)))
        case .now:
            _ = journal.seekTail()
            // On the last entry there is: it and everything before it count as handled (so a restart before the next
            // entry does not skip what was added meanwhile).
            if journal.previous() > 0 {
                if let cursor = journal.withCursor({ String(decoding: $0, as: UTF8.self) }) { acknowledgedCursor = cursor }
            } else {
                // No (matching) entry yet: everything that comes is new. At the head, not the tail: sd-journal's tail
                // position would return only the last entry of a file that appears later.
                _ = journal.seekHead()
            }
        }
    }

    /// Reads up to `entriesPerTurn` entries and sends them; returns whether more may be there right away.
    private func readSome() async -> Bool {
        if let at = readErrorAt {
            guard at.advanced(by: Self.readErrorRetry) <= clock.now else { return false }
            readErrorAt = nil
        }
        var count = 0
        while count < Self.entriesPerTurn {
            let result = journal.next()
            if result < 0 {
                statistics.readErrors += 1
                readErrorAt = clock.now
                if !warnedReadError {
                    warnedReadError = true
                    logger.warning(
                        "journald source: cannot read the journal (\(JournaldJournal.errorText(result))); trying again on the next change or in \(Self.readErrorRetry)"
                    )
                }
                await flush()
                return false
            }
            if result == 0 {
                await flush()
                return false
            }
            if let skip = skipCursor {
                skipCursor = nil
                if journal.testCursor(skip) > 0 { continue }
                logger.info(
                    "journald source: the checkpoint's entry is no longer in the journal (vacuumed?); continuing with the entry after its place"
                )
            }
            count += 1
            let appended = await appendEntry()
            if appended, batch.count >= Self.batchEntries || batch.messageBytes.count >= Self.batchBytes { await flush() }
            if stopped || Task.isCancelled { return false }
        }
        await flush()
        return true
    }

    /// Waits for a change of the journal, an acknowledgement of what was sent, the checkpoint's due time, a read
    /// error's retry, or cancellation.
    private func idle() async {
        let now = clock.now
        var deadline = now.advanced(by: Self.longestIdleWait)
        if acknowledgedCursor != writtenCursor, let due = checkpointSchedule.due {
            deadline = min(deadline, max(now, due))
        }
        if let at = readErrorAt { deadline = min(deadline, at.advanced(by: Self.readErrorRetry)) }
        if watcher == nil { deadline = min(deadline, now.advanced(by: Self.readErrorRetry)) }
        if let timeout = journal.timeoutMicroseconds() {
            var spec = timespec()
            clock_gettime(CLOCK_MONOTONIC, &spec)
            let nowMicroseconds = UInt64(spec.tv_sec) * 1_000_000 + UInt64(spec.tv_nsec) / 1000
            let wait = timeout > nowMicroseconds ? timeout - nowMicroseconds : 0
            deadline = min(deadline, now.advanced(by: .microseconds(Int64(min(wait, 3_600_000_000)))))
        }
        let until = max(deadline, now.advanced(by: .milliseconds(1)))
        watcher?.arm()
        let wakeup = self.wakeup
        let sink = self.sink
        let awaited: UInt64? = pendingHead < pending.count ? pending[pendingHead].sequence : nil
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await wakeup.wait(until: until) }
            if let awaited {
                group.addTask { _ = await sink.waitForAcknowledgement(after: awaited &- 1) }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Lets sd-journal take the changes its descriptor signalled (new entries, files added or removed).
    private func takeChanges() {
        let result = journal.process()
        if result == Int32(SD_JOURNAL_INVALIDATE) {
            statistics.invalidations += 1
            logger.debug("journald source: the journal's files changed")
        }
    }

    private func shutdown() async {
        await LogReaderStop.awaitAcknowledgement(
            of: lastAppendedSequence, from: sink, kind: "journald", record: "entry", logger: logger)
        acknowledge()
        await writeCheckpoint(force: true)
        if let watcher, await !watcher.stop() {
            logger.warning("journald source: the journal watcher thread did not stop within a second")
        }
        watcher = nil
        logger.debug(
            "journald source stopped",
            metadata: [
                "records": "\(statistics.records)", "truncated_messages": "\(statistics.truncatedMessages)",
                "rejected_oversize": "\(statistics.rejectedOversize)", "invalidations": "\(statistics.invalidations)",
                "read_errors": "\(statistics.readErrors)",
            ])
    }

    // MARK: Acknowledgements and the checkpoint

    /// Advances the checkpoint to the last batch the collector acknowledged.
    func acknowledge() {
        let acknowledged = sink.acknowledgedSequence
        var bytes = 0
        let before = pendingHead
        while pendingHead < pending.count, pending[pendingHead].sequence <= acknowledged {
            acknowledgedCursor = pending[pendingHead].cursor
            bytes += pending[pendingHead].bytes
            pendingHead += 1
        }
        if pendingHead > before {
            if bytes > 0 { checkpointSchedule.acknowledged(bytes: bytes) } else { checkpointSchedule.markChanged() }
        }
        if pendingHead == pending.count {
            pending.removeAll(keepingCapacity: pending.count <= 4096)
            pendingHead = 0
        } else if pendingHead >= 1024, pendingHead * 2 >= pending.count {
            pending.removeFirst(pendingHead)
            pendingHead = 0
        }
    }

    /// Reads the checkpoint file, if any. One that cannot be read or parsed gives one warning and is ignored.
    private func loadCheckpoint() -> String? {
        guard let path = checkpointPath else {
            logger.debug("journald source: no state directory, the cursor is kept in memory only")
            return nil
        }
        switch SourceFiles.readAll(path, limit: 64 * 1024) {
        case .success(let bytes):
            switch JournaldCheckpointFile.decode(bytes) {
            case .success(let cursor): return cursor
            case .failure(let error):
                logger.warning(
                    "journald source: the checkpoint file \(path) is corrupt (\(error)); ignoring it and starting as on a first start"
                )
                return nil
            }
        case .failure(let error):
            if error.code != ENOENT {
                logger.warning("journald source: cannot read the checkpoint file \(path) (\(error)); starting as on a first start")
            }
            return nil
        }
    }

    /// Writes the acknowledged cursor when it changed and the write is due (`CheckpointSchedule`), or now, with `force`.
    func writeCheckpoint(force: Bool) async {
        guard let cursor = acknowledgedCursor, cursor != writtenCursor else { return }
        let now = clock.now
        guard force || checkpointSchedule.isDue(now: now) else { return }
        checkpointSchedule.writing(at: now)
        guard let path = checkpointPath else {
            writtenCursor = cursor
            return
        }
        let error = await SourceFiles.writeAtomicallyOnThreadPool(path, JournaldCheckpointFile.encode(cursor: cursor))
        if error == nil { writtenCursor = cursor } else { checkpointSchedule.markChanged() }
        checkpointWriteReport.record(error, path: path, kind: "journald", logger: logger)
    }
}

/// What every `journald` source runs (`JournaldConfig.Engine`).
extension JournaldEngine: LogReaderEngine {}
