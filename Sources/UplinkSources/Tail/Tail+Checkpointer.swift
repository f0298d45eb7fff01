import Logging
import UplinkCore
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The checkpoint file of one `tail` source and the changes file beside it (`TailCheckpointFile`,
/// `TailCheckpointChanges`): reads them once at start, and writes where the followed files stand when that changed
/// and the `CheckpointSchedule` says it is due (after the checkpoint interval; after 30 when acknowledgements only
/// trickled). It knows what the checkpoint file on disk holds, so when only a few files moved
/// among many it writes just those to the changes file instead of rewriting every entry.
///
/// The engine tells it when a checkpoint changed (`markChanged`) or acknowledgements moved (`acknowledged(bytes:)`),
/// asks it when to look next (`nextLook`)
/// and hands it the followed files and the time at each write. Used by the engine's task only; the writes (and their
/// `fsync`s) run on NIO's thread pool.
final class TailCheckpointer {
    /// The checkpoint file; nil: no state directory, checkpoints are kept in memory only and nothing is written.
    let path: String?
    /// When the next write is due (`TailConfig.checkpointInterval`, and what changed since the last write).
    private var schedule: CheckpointSchedule
    /// Told why a file could not be read or written (once per run of failures) and what was ignored.
    let logger: Logger
    /// Whether a checkpoint changed since the last write.
    var isDirty: Bool { schedule.isDirty }
    /// The entries the checkpoint file holds, and the hash of its bytes that a changes file must name; nil before
    /// it was read or written (the next write then rewrites it whole).
    private var fileEntries: [FileIdentity: TailCheckpoint] = [:]
    private var fileHash: UInt64?
    /// Whether a changes file may be on disk: removed when the checkpoint file alone says it all or is rewritten.
    private var changesFileWritten = false
    private var writeReport = CheckpointWriteReport()

    /// A checkpointer for the checkpoint file at `path` (nil: in memory only); `now` starts the first interval.
    init(path: String?, interval: Duration, logger: Logger, now: ContinuousClock.Instant) {
        self.path = path
        schedule = CheckpointSchedule(interval: interval, now: now)
        self.logger = logger
    }

    /// The checkpointer of the source `sourceName`, whose checkpoint file is in `stateDirectory` (nil: in memory
    /// only). Creates the file's directory; throws a `SourceError` naming the source when it cannot, so a
    /// misconfigured state directory stops the source before it reads anything.
    convenience init(
        stateDirectory: String?, sourceName: String, interval: Duration, logger: Logger, now: ContinuousClock.Instant
    ) throws {
        guard let stateDirectory else {
            self.init(path: nil, interval: interval, logger: logger, now: now)
            return
        }
        let path = TailCheckpointFile.path(stateDirectory: stateDirectory, sourceName: sourceName)
        let directory = AtomicFile.parentDirectory(of: path)
        if let error = SourceFiles.makeDirectories(directory) {
            throw SourceError("tail source '\(sourceName)': cannot create the checkpoint directory \(directory): \(error)")
        }
        self.init(path: path, interval: interval, logger: logger, now: now)
    }

    /// A checkpoint changed otherwise than by acknowledgements (a file was added, renamed, truncated or forgotten):
    /// written one interval after the last write.
    func markChanged() {
        schedule.markChanged()
    }

    /// Acknowledgements moved the followed files `bytes` further (a trickle is written less often).
    func acknowledged(bytes: Int) {
        schedule.acknowledged(bytes: bytes)
    }

    // MARK: Loading

    /// Reads the checkpoint file and its changes file, if any, and returns the checkpoints they say together. A file
    /// that cannot be read or parsed gives one warning and is ignored (a changes file alone: the checkpoint file's
    /// older offsets are used, and the lines after them are sent again, for the collector to recognise).
    func load() -> [TailCheckpoint] {
        guard let path else {
            logger.debug("tail source: no state directory, checkpoints are kept in memory only")
            return []
        }
        let bytes: [UInt8]
        switch SourceFiles.readAll(path) {
        case .success(let content): bytes = content
        case .failure(let error):
            if error.code != ENOENT {
                logger.warning("tail source: cannot read the checkpoint file \(path) (\(error)); starting without checkpoints")
            }
            return []
        }
        switch TailCheckpointFile.decode(bytes) {
        case .success(let entries):
            for checkpoint in entries { fileEntries[checkpoint.inode] = checkpoint }
            fileHash = TailCheckpointChanges.contentHash(bytes)
            changesFileWritten = FileStatus(path: TailCheckpointChanges.path(checkpointFile: path)) != nil
            let (checkpoints, problem) = TailCheckpointChanges.merge(entries, checkpointFileBytes: bytes, checkpointFile: path)
            if let problem {
                logger.warning("tail source: \(problem); using the checkpoint file alone (lines after its offsets are sent again)")
            }
            return checkpoints
        case .failure(let error):
            logger.warning(
                "tail source: the checkpoint file \(path) is corrupt (\(error)); ignoring it and starting without checkpoints"
            )
            return []
        }
    }

    // MARK: Writing

    /// When the engine should look next, idle: when the write is due, and with `awaitingAcknowledgement` (lines wait for
    /// the collector) an interval from now at the latest, to take the acknowledgements; nil when neither.
    func nextLook(now: ContinuousClock.Instant, awaitingAcknowledgement: Bool) -> ContinuousClock.Instant? {
        schedule.nextLook(now: now, awaitingAcknowledgement: awaitingAcknowledgement)
    }

    /// Writes where `files` stand (their acknowledged offsets) when the write is due (or at once, with `force`, when
    /// anything changed). When only a few files moved (fewer than a quarter of the entries
    /// differ from the checkpoint file), only they are written, to the changes file; otherwise the checkpoint file is
    /// rewritten whole and the changes file removed. So thousands of files at rest cost nothing per checkpoint, and a
    /// handful of files keep a single file. A failed write stays due (retried after the interval) and is logged once.
    nonisolated(nonsending) func write(_ files: [TailedFile], force: Bool, now: ContinuousClock.Instant) async {
        guard schedule.isDirty, force || schedule.isDue(now: now) else { return }
        schedule.writing(at: now)
        guard let path else { return }
        var current: [(file: TailedFile, checkpoint: TailCheckpoint)] = []
        current.reserveCapacity(files.count)
        var changed = 0
        var present = 0
        for file in files {
            let checkpoint = TailCheckpoint(
                inode: file.inode, fingerprint: file.fingerprint, originID: file.originID, offset: file.acknowledgedOffset,
                path: file.path)
            if let entry = fileEntries[file.inode] {
                present += 1
                if entry != checkpoint { changed += 1 }
            } else {
                changed += 1
            }
            current.append((file, checkpoint))
        }
        // Entries of files no longer followed (not below 0: a closed file and its successor on the same inode are both
        // present).
        let removed = max(0, fileEntries.count - present)
        let changesPath = TailCheckpointChanges.path(checkpointFile: path)
        let error: SourceFiles.Errno?
        var written = path
        if fileHash != nil, changed == 0, removed == 0 {
            // The checkpoint file says it all.
            if changesFileWritten { SourceFiles.removeFile(changesPath) }
            changesFileWritten = false
            error = nil
        } else if let base = fileHash, (changed + removed) * 4 < current.count {
            let lines = current.compactMap { entry in
                fileEntries[entry.checkpoint.inode] == entry.checkpoint ? nil : Self.line(entry.file, entry.checkpoint)
            }
            written = changesPath
            error = await SourceFiles.writeAtomicallyOnThreadPool(changesPath, TailCheckpointChanges.encode(base: base, lines: lines))
            if error == nil { changesFileWritten = true }
        } else {
            let bytes = TailCheckpointFile.encode(lines: current.map { Self.line($0.file, $0.checkpoint) })
            error = await SourceFiles.writeAtomicallyOnThreadPool(path, bytes)
            if error == nil {
                fileEntries = [:]
                for entry in current { fileEntries[entry.checkpoint.inode] = entry.checkpoint }
                fileHash = TailCheckpointChanges.contentHash(bytes)
                // Written against the old content, it would be ignored; removed so the directory shows the state.
                if changesFileWritten { SourceFiles.removeFile(changesPath) }
                changesFileWritten = false
            }
        }
        if error != nil { schedule.markChanged() }
        writeReport.record(error, path: written, kind: "tail", logger: logger)
    }

    /// A file's checkpoint line, made again only when its entry changed: with thousands of files, one moves at a time.
    private static func line(_ file: TailedFile, _ checkpoint: TailCheckpoint) -> [UInt8] {
        if let cached = file.encodedCheckpoint, cached.checkpoint == checkpoint { return cached.line }
        let line = TailCheckpointFile.encodeLine(checkpoint)
        file.encodedCheckpoint = (checkpoint, line)
        return line
    }
}
