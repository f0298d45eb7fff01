import Logging
import NIOCore
import Synchronization
import UplinkCore
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The running state of one `tail` source: the files it follows and the loop that reads them. Used only by the
/// source's task; the opener, the wakeup and inotify (whose events are handled on the send path's loop) are the parts
/// shared with other threads.
///
/// One turn of the loop: take what the opener saw at the followed paths (new files, vanished ones), follow the new
/// paths inotify named (or expand the globs when due), open parked files that changed, read every awake file (a
/// bounded amount each, older incarnations of a path first), send partial lines and multi-line records whose
/// timeout passed, close rotated files that are done, park quiet ones, advance checkpoints to the acknowledged
/// sequence and write them when due. When nothing was left to read it waits for inotify, a timer or the poll
/// interval.
///
/// Scale: a file read to its end and quiet for `parkAfter` at its path is parked (its descriptor closed, its state
/// kept), so the work of a turn and the open descriptors grow with the files that are written, not with the files
/// matched. inotify names what changed; only polling looks at every parked file (every poll interval).
final class TailEngine {
    let name: String
    let config: TailConfig
    let sink: any RecordSink
    let logger: Logger
    /// Told whether every matched file could be opened (`SourceHealth`).
    let health: SourceHealth
    let startPattern: Regex<AnyRegexOutput>?
    /// What every timeout, interval and the linger budget are measured on (`clock.now`) and waited out with.
    let clock: any TickClock
    /// `uplink.linger`: how long to let lines gather after an idle wait before reading them.
    let linger: Duration
    let opener: TailOpener
    let wakeup: SourceWakeup
    /// Where inotify's channels live: the send path's loop (`SourceContext.eventLoop`; nil: one of NIO's singleton's).
    let eventLoop: (any EventLoop)?
    var inotify: TailInotify? {
        // Polling stands in for inotify's events; with inotify, looking now and then is only a safety net.
        didSet { scanInterval.set(inotify == nil ? config.pollInterval : nil) }
    }
    /// How often the opener looks at the followed paths from its own task (see `run`).
    let scanInterval: TailScanInterval

    /// The followed files, by path and inode, and the ones a turn reads.
    var fileSet = TailFileSet()
    /// Followed files in the order they were opened (older incarnations of a path before newer ones).
    var files: [TailedFile] { fileSet.all }
    /// The files a turn looks at: all but the parked ones at their paths (`files` order).
    var awake: [TailedFile] { fileSet.awake }
    /// When to look for the files the globs match, and what the looks remember.
    var discovery: TailDiscovery
    /// When polling, parked files are looked at (`stat`) at most this often.
    var nextParkedCheck: ContinuousClock.Instant
    /// Where recently closed rotated files stood (a rotated file found again later, e.g. renamed once more to a
    /// matching name, continues there instead of being read again).
    var recentlyClosed = TailRecentlyClosed(limit: 1024)
    /// Checkpoints read at start, until the first discovery matched them.
    var loadedCheckpoints: [FileIdentity: TailCheckpoint] = [:]
    var checkpointedPaths: Set<String> = []

    /// The checkpoint file: loaded at start, written when due with the followed files' checkpoints.
    let checkpointer: TailCheckpointer
    /// Which new files are copies `copytruncate` made of followed ones, and where a truncated file's copy is.
    let copies: TailCopyDetector

    let buffer: UnsafeMutableRawBufferPointer
    let scratch: UnsafeMutableRawBufferPointer
    var batch = LogLineBatch(source: "", fields: [], originID: 0)

    var lastAppendedSequence: UInt64 = 0
    var warnedPaths: Set<String> = []
    /// Paths refused (and logged) because of `TailConfig.allowedRealPaths`.
    var refusedPaths: Set<String> = []
    var warnedNothingFound = false
    var warnedSkipped = 0
    /// Set when the sink dropped lines: the task was cancelled.
    var stopped = false
    var statistics = TailStatistics()
    /// Made on the first idle wait on `L` (`inPlaceReaderIfOnLoop`).
    private var inPlaceReader: TailInPlaceReader?

    /// Bytes read at once: one batch of lines. Everything a batch needs on its way into the ring (the lines, their
    /// frames) scales with it, and a large backlog is read in full chunks, so this sets part of the agent's peak
    /// memory while it drains one; a larger chunk costs more memory without draining faster (docs/deploy.md,
    /// "Draining a backlog").
    static let chunkBytes = 128 * 1024
    /// Chunks read from one file before the others get their turn.
    static let chunksPerTurn = 4
    /// How long a renamed or deleted file stays open after its last growth, for a writer that has not reopened.
    static let detachedLinger: Duration = .seconds(1)
    /// Rotated files kept open at most; beyond it the oldest finished ones are closed without lingering.
    static let maximumDetachedOpen = 128
    /// A file at its path read to its end, with nothing pending, quiet this long is parked.
    static let parkAfter: Duration = .seconds(5)
    /// How often the opener's task wakes to see whether polling began, while inotify makes its looks.
    static let watchedScanInterval: Duration = .seconds(60)

    init(name: String, config: TailConfig, context: SourceContext, clock: any TickClock) throws {
        self.name = name
        self.config = config
        sink = context.sink
        logger = context.logger
        health = context.health
        linger = context.linger
        eventLoop = context.eventLoop
        self.clock = clock
        wakeup = SourceWakeup(clock: clock, eventLoop: context.eventLoop)
        opener = TailOpener(allowedRealPaths: config.allowedRealPaths.map { $0.map(TailGlob.init) })
        if let pattern = config.multilineStartPattern {
            do {
                startPattern = try Regex(pattern)
            } catch {
                throw SourceError("tail source '\(name)': invalid multiline.start_pattern \"\(pattern)\": \(error)")
            }
        } else {
            startPattern = nil
        }
        checkpointer = try TailCheckpointer(
            stateDirectory: context.stateDirectory, sourceName: name, interval: config.checkpointInterval,
            logger: context.logger, now: clock.now)
        copies = TailCopyDetector(clock: clock, opener: opener, logger: context.logger, emptyFileWait: Self.parkAfter)
        scanInterval = TailScanInterval(config.pollInterval)
        buffer = .allocate(byteCount: Self.chunkBytes, alignment: 16)
        scratch = .allocate(byteCount: TailFingerprint.maximumLength, alignment: 16)
        let now = clock.now
        discovery = TailDiscovery(config: config, now: now)
        nextParkedCheck = now
        batch.source = name
    }

    deinit {
        buffer.deallocate()
        scratch.deallocate()
    }

    // MARK: The loop

    func run() async {
        loadCheckpoints()
        startWatching()
        let opener = self.opener
        let wakeup = self.wakeup
        let scanInterval = self.scanInterval
        let clock = self.clock
        await withTaskGroup(of: Void.self) { group in
            // Catches files replaced at a followed path while the reader waits (for buffer space, or idle). With
            // inotify its directory events do this, so an idle agent stays asleep.
            group.addTask {
                while !Task.isCancelled {
                    // With inotify (no interval) its events make the looks, and the engine's discovery is the safety net.
                    let interval = max(scanInterval.get() ?? Self.watchedScanInterval, .milliseconds(1))
                    try? await clock.sleep(until: clock.now.advanced(by: interval))
                    if scanInterval.get() != nil, opener.scan() { wakeup.signal() }
                }
            }
            await self.loop()
            group.cancelAll()
        }
        await shutdown()
    }

    private nonisolated(nonsending) func loop() async {
        discover(initial: true)
        if !loadedCheckpoints.isEmpty {
            logger.debug("tail source: forgetting \(loadedCheckpoints.count) checkpoints of files no longer found")
            loadedCheckpoints = [:]
        }
        checkpointedPaths = []
        checkpointer.markChanged()
        await checkpointer.write(files, force: true, now: clock.now)
        while !Task.isCancelled, !stopped {
            let more = await turn()
            if Task.isCancelled || stopped { break }
            if more {
                await Task.yield()
                continue
            }
            inotify?.arm()
            if linger == .zero { inotify?.setReaderWaitingIdle(true, inPlace: inPlaceReaderIfOnLoop()) }
            await wakeup.wait(until: idleDeadline())
            inotify?.setReaderWaitingIdle(false)
            if linger > .zero {
                // `uplink.linger`: what arrives within the budget is read, encoded and sent in one pass. Only after an
                // idle wait: a backlog (`more`) is read at once, so bulk throughput does not depend on it.
                try? await clock.sleep(until: clock.now.advanced(by: linger))
            }
        }
    }

    /// One turn; returns whether data is left to read right away.
    private nonisolated(nonsending) func turn() async -> Bool {
        // With inotify the paths its events name are looked at as they come.
        if inotify == nil { opener.scan() }
        handleOpenerEvents()
        if let watcher = inotify {
            let changes = watcher.takeDirectoryChanges()
            if changes.full {
                discovery.request()
            } else if !changes.paths.isEmpty {
                for path in changes.paths.sorted() where discovery.matches(path) {
                    if let problem = follow(path, initial: false) { health.failed(problem) }
                }
                handleOpenerEvents()
            }
            let modified = watcher.takeModifiedParked()
            if modified.lost {
                checkParked()
            } else {
                for path in modified.paths {
                    if let file = fileSet.file(at: path), file.isParked { unpark(file) }
                }
            }
        }
        if discovery.isDue(now: clock.now) {
            if !discovery.requested, inotify != nil, discovery.directoriesUnchanged() {
                // The safety net finds nothing inotify did not report: no directory changed since the last look.
                discovery.skip(now: clock.now)
            } else {
                discover(initial: false)
                if inotify != nil { opener.scan() }
                handleOpenerEvents()
            }
        }
        if inotify == nil, clock.now >= nextParkedCheck {
            nextParkedCheck = clock.now.advanced(by: config.pollInterval)
            checkParked()
        }
        var more = false
        var blockedChains: Set<String> = []
        for file in awake where file.isOpen {
            if blockedChains.contains(file.chain) {
                more = true
                continue
            }
            if !mayRead(file) { continue }
            file.fingerprintVerifiedThisTurn = false
            let reachedEnd = await read(file)
            if stopped || Task.isCancelled { return false }
            if !reachedEnd {
                more = true
                blockedChains.insert(file.chain)
            } else if !file.isDetached, await checkTruncated(file) {
                more = true
            }
        }
        await flushTimedOut()
        if stopped || Task.isCancelled { return false }
        await closeFinishedDetached()
        parkQuiet()
        acknowledge()
        await checkpointer.write(files, force: false, now: clock.now)
        reportSkipped()
        return more
    }

    /// The in-place reader, when this task runs on `L` (its executor is the loop's: `SourceService` with the send
    /// path's loop), where the inotify handlers run; nil otherwise (a task on Swift's global executor would race them).
    private func inPlaceReaderIfOnLoop() -> TailInPlaceReader? {
        guard let eventLoop, eventLoop.inEventLoop else { return nil }
        if inPlaceReader == nil { inPlaceReader = TailInPlaceReader(self) }
        return inPlaceReader
    }

    /// When to stop waiting when idle: at the next timer, at most the poll interval from now (with inotify, whose
    /// events wake the engine, at the next discovery).
    private func idleDeadline() -> ContinuousClock.Instant {
        let now = clock.now
        let safetyNet = inotify == nil ? config.pollInterval : max(config.pollInterval, config.discoveryInterval)
        var deadline = min(discovery.next, now.advanced(by: safetyNet))
        for file in awake where !file.isClosed {
            if let decision = copies.decisionDeadline(of: file) {
                deadline = min(deadline, decision)
            }
            if mayPark(file) {
                deadline = min(deadline, file.lastGrowth.advanced(by: Self.parkAfter))
            }
            if file.splitter.hasCarry {
                deadline = min(deadline, file.lastGrowth.advanced(by: config.partialLineTimeout))
            }
            if let last = file.multiline?.lastAppend {
                deadline = min(deadline, last.advanced(by: config.multilineTimeout))
            }
            if let detachedAt = file.detachedAt {
                deadline = min(deadline, max(detachedAt, file.lastGrowth).advanced(by: Self.detachedLinger))
            }
        }
        if let look = checkpointer.nextLook(now: now, awaitingAcknowledgement: awake.contains(where: \.hasUnacknowledged)) {
            deadline = min(deadline, look)
        }
        return max(now.advanced(by: .milliseconds(1)), deadline)
    }

    private func shutdown() async {
        await LogReaderStop.awaitAcknowledgement(
            of: lastAppendedSequence, from: sink, kind: "tail", record: "line", logger: logger)
        acknowledge()
        await checkpointer.write(files, force: true, now: clock.now)
        // Stopped first: no event handled after it opens a file through the opener that `closeAll` would miss.
        await inotify?.stop()
        for file in files { closeFile(file) }
        fileSet.removeAll()
        opener.closeAll()
        inotify = nil
        logger.debug(
            "tail source stopped",
            metadata: [
                "records": "\(statistics.records)", "bytes_read": "\(statistics.bytesRead)",
                "truncated_lines": "\(statistics.truncatedLines)", "rejected_oversize": "\(statistics.rejectedOversize)",
                "truncations": "\(statistics.truncations)", "copies_finished": "\(statistics.copiesFinished)",
                "rotations": "\(statistics.rotations)",
                "files_opened": "\(statistics.filesOpened)", "reads_in_place": "\(statistics.readsInPlace)",
                "refused_outside_allowed_paths": "\(statistics.refusedOutsideAllowedPaths)",
            ])
    }

    // MARK: Watching

    private func startWatching() {
        guard config.watch == .auto else { return }
        #if canImport(Glibc) || canImport(Musl)
        switch TailInotify.make(opener: opener, wakeup: wakeup, eventLoop: eventLoop) {
        case .success(let watcher):
            inotify = watcher
        case .failure(let error):
            logger.warning(
                "tail source: inotify is unavailable (\(error)); polling every \(config.pollInterval) instead")
        }
        #endif
    }

    /// Gives up inotify (its watch limit is exhausted) and polls from now on.
    func fallBackToPolling(_ error: SourceFiles.Errno) {
        guard let watcher = inotify else { return }
        logger.warning(
            "tail source: cannot add an inotify watch (\(error)\(error.code == ENOSPC ? ", the limit fs.inotify.max_user_watches is reached" : "")); polling every \(config.pollInterval) instead"
        )
        inotify = nil
        for file in files { file.modifyWatch = nil }
        Task { await watcher.stop() }
        // Parked files are looked at by polling from now on.
        nextParkedCheck = clock.now
    }

    // MARK: Discovery

    /// Looks for the files the globs match: follows new ones, watches the directories that matter, gives up watched
    /// paths that stayed empty (`TailDiscovery`).
    func discover(initial: Bool) {
        let expansion = discovery.look(now: clock.now)
        if let watcher = inotify, let error = watcher.watch(directories: expansion.directories) {
            fallBackToPolling(error)
        }
        var failure: String?
        for path in expansion.files {
            if let problem = follow(path, initial: initial) { failure = failure ?? problem }
        }
        if let failure {
            health.failed(failure)
        } else if expansion.files.isEmpty, statistics.filesOpened == 0 {
            health.idle("no file matches \(config.paths.joined(separator: ", ")) yet")
        } else {
            health.succeeded()
        }
        if expansion.files.isEmpty, statistics.filesOpened == 0 {
            if !warnedNothingFound {
                warnedNothingFound = true
                logger.warning(
                    "tail source: no file matches \(config.paths) yet (missing directory?); looking again every \(config.discoveryInterval)\(inotify == nil ? "" : " and on directory changes")"
                )
            }
        } else if !expansion.files.isEmpty {
            warnedNothingFound = false
        }
        let fileSet = self.fileSet
        let forgotten = discovery.finishLook(
            watched: opener.trackedPaths, found: Set(expansion.files), followed: { fileSet.file(at: $0) != nil },
            now: clock.now)
        for path in forgotten { opener.untrackIfIdle(path) }
    }

    /// Starts watching a path the globs match and following the file there, unless it is followed already.
    /// Returns why the file there cannot be opened (it exists but is unreadable, or outside the allowed paths), for
    /// the source's health; nil otherwise.
    @discardableResult
    func follow(_ path: String, initial: Bool) -> String? {
        guard fileSet.file(at: path) == nil else { return nil }
        if let alias = fileSet.alias(at: path) {
            if FileStatus(path: path)?.identity == alias, fileSet.file(inode: alias) != nil { return nil }
            fileSet.setAlias(nil, at: path)
        }
        switch opener.track(path) {
        case nil:
            return nil  // watched already: its events tell what is there
        case .success(let opened):
            adopt(opened, at: path, initial: initial)
            return nil
        case .failure(let error):
            if reportRefusal(at: path) { return "not opening \(path): its real path is outside the allowed paths" }
            guard error.code != ENOENT else { return nil }
            if warnedPaths.insert(path).inserted {
                logger.warning("tail source: cannot open \(path): \(error)", metadata: ["path": "\(path)"])
            }
            return "cannot open \(path): \(error)"
        }
    }

    /// Logs (once per path) and counts a file the opener refused at `path` because its real path is outside
    /// `TailConfig.allowedRealPaths`; false when that was not why opening failed.
    func reportRefusal(at path: String) -> Bool {
        guard let real = opener.takeRefusal(at: path) else { return false }
        if refusedPaths.insert(path).inserted {
            statistics.refusedOutsideAllowedPaths += 1
            logger.warning(
                "tail source: not opening \(path): its real path \(real) is outside the allowed paths (remote_config.allow.tail_paths)",
                metadata: ["path": "\(path)", "real_path": "\(real)"])
        }
        return true
    }

    /// Starts following a file opened at `path`, or, when it is a file followed already (renamed here), moves
    /// that one to the path.
    func adopt(_ opened: TailOpener.Opened, at path: String, initial: Bool) {
        let inode = opened.status.identity
        if let existing = fileSet.file(inode: inode) {
            SourceFiles.closeDescriptor(opened.descriptor)
            if existing.isDetached {
                existing.detachedAt = nil
                fileSet.awakeChanged()
                moveActive(existing, to: path)
            } else if existing.path != path {
                if FileStatus(path: existing.path)?.identity == inode {
                    fileSet.setAlias(inode, at: path)  // a second name of a followed file
                    opener.untrack(path)
                } else {
                    moveActive(existing, to: path)  // renamed, and the opener has not reported it yet
                }
            }
            // A parked file renamed (logrotate shifting app.log.1 to app.log.2) stays closed unless it changed. Looked
            // at after the move: a write from now on is reported under the new name.
            if existing.isParked, !existing.isDetached, let status = FileStatus(path: existing.path),
                status.identity == inode, existing.changedSinceParked(status)
            {
                unpark(existing)
            }
            return
        }
        if let active = fileSet.file(at: path) { detach(active) }

        var originID = newTailOriginID()
        var offset: UInt64 = 0
        let fingerprint = TailFingerprint.current(descriptor: opened.descriptor, scratch: scratch)
        // The size now, not when the opener opened it: a copy being written then (logrotate's `copytruncate`) may
        // be complete by the time its event is taken, and its checkpoint (where its incarnation stands) beyond the
        // size it had.
        let size = FileStatus(descriptor: opened.descriptor)?.size ?? opened.status.size
        if let checkpoint = loadedCheckpoints.removeValue(forKey: inode) ?? recentlyClosed.take(inode) {
            if checkpoint.fingerprint.verified(descriptor: opened.descriptor, scratch: scratch) != nil,
                checkpoint.offset <= size
            {
                originID = checkpoint.originID
                offset = checkpoint.offset
                logger.debug("tail source: resuming \(path) at offset \(offset)", metadata: ["path": "\(path)"])
            } else {
                logger.info(
                    "tail source: \(path) is not the file its checkpoint describes (truncated, or a new file with a reused inode); reading it from the start",
                    metadata: ["path": "\(path)"])
            }
        } else if initial, config.startAt == .end, !checkpointedPaths.contains(path) {
            offset = size
        }
        let mayBeCopy = !initial && offset == 0
        logger.debug(
            "tail source: following \(path) from offset \(offset)",
            metadata: ["path": "\(path)", "inode": "\(inode.inode)", "origin": "\(originID)"])
        let file = TailedFile(
            descriptor: opened.descriptor, inode: inode, path: path, fingerprint: fingerprint, originID: originID,
            offset: offset, maxLineBytes: config.maxLineBytes,
            multiline: startPattern.map { TailMultiline(startPattern: $0, maxBytes: config.maxLineBytes) },
            now: clock.now)
        if mayBeCopy { file.copyState = .undecided(since: nil) }
        file.neverPark = TailFS.isSymbolicLink(path)
        fileSet.add(file)
        statistics.filesOpened += 1
        checkpointer.markChanged()
        if let watcher = inotify {
            switch watcher.watchModifications(of: opened.descriptor) {
            case .success(let watch): file.modifyWatch = watch
            case .failure(let error): fallBackToPolling(error)
            }
        }
    }

    func moveActive(_ file: TailedFile, to path: String) {
        let previous = file.path
        fileSet.vacate(file)
        if let other = fileSet.file(at: path), other !== file { detach(other) }
        file.path = path
        file.neverPark = TailFS.isSymbolicLink(path)
        fileSet.setActive(file)
        syncParked(previous)
        syncParked(path)
        file.atEnd = false
        checkpointer.markChanged()
    }

    /// The file is no longer at its path: keep reading it to its end, then close it.
    func detach(_ file: TailedFile) {
        fileSet.vacate(file)
        guard !file.isDetached else { return }
        logger.debug(
            "tail source: \(file.path) is no longer at its path; reading it to its end",
            metadata: ["path": "\(file.path)", "inode": "\(file.inode.inode)"])
        file.detachedAt = clock.now
        file.detachedAtDiscovery = discovery.count
        if file.isParked {
            // Read to its end when it was parked; it is closed once a discovery showed where it went.
            syncParked(file.path)
            fileSet.awakeChanged()
        } else {
            file.atEnd = false
        }
        // A discovery shows whether it was renamed to another followed path.
        discovery.request()
    }

    /// Applies what the opener saw at the followed paths, in order.
    func handleOpenerEvents() {
        for (path, events) in opener.takeEvents() {
            for event in events {
                switch event {
                case .vanished:
                    if let active = fileSet.file(at: path) { detach(active) }
                case .failed(let error):
                    if let active = fileSet.file(at: path) { detach(active) }
                    if reportRefusal(at: path) { continue }
                    if warnedPaths.insert(path).inserted {
                        logger.warning("tail source: cannot open \(path): \(error)", metadata: ["path": "\(path)"])
                    }
                case .opened(let opened):
                    if let active = fileSet.file(at: path) {
                        if active.inode == opened.status.identity {
                            SourceFiles.closeDescriptor(opened.descriptor)
                            continue
                        }
                        detach(active)
                    }
                    statistics.rotations += 1
                    adopt(opened, at: path, initial: false)
                }
            }
        }
    }

    private func reportSkipped() {
        let skipped = opener.skipped
        guard skipped > warnedSkipped else { return }
        logger.warning(
            "tail source: \(skipped - warnedSkipped) files replaced at a followed path were not opened: more than \(TailOpener.maximumPendingPerPath) were waiting to be read"
        )
        warnedSkipped = skipped
    }

    // MARK: Acknowledgements and checkpoints

    /// Takes the checkpoints the checkpoint file holds, to resume the files the first discovery finds.
    private func loadCheckpoints() {
        for checkpoint in checkpointer.load() {
            loadedCheckpoints[checkpoint.inode] = checkpoint
            checkpointedPaths.insert(checkpoint.path)
        }
    }

    /// Advances every file's checkpoint to the acknowledged sequence.
    func acknowledge() {
        let acknowledged = sink.acknowledgedSequence
        for file in awake {
            let before = file.acknowledgedOffset
            guard file.acknowledge(through: acknowledged) else { continue }
            let after = file.acknowledgedOffset
            if after > before {
                checkpointer.acknowledged(bytes: Int(clamping: after - before))
            } else {
                checkpointer.markChanged()
            }
        }
    }
}

/// What every `tail` source runs (`TailConfig.Engine`).
extension TailEngine: LogReaderEngine {}

/// Lets the modification channel's handler read for the engine (`TailEngine.readInPlace`) while the engine's task
/// waits idle, which saves the task a wake-up per write at ordinary rates. Unchecked `Sendable`, and sound only as
/// used: the engine hands it to inotify just before its idle wait and takes it back right after, both on `L`, and
/// only when its task's jobs run on `L` (`inPlaceReaderIfOnLoop`); the handler calls it on `L`. So the handler and the
/// task never run at once, and the task is suspended between turns, its state whole, whenever `read` runs.
final class TailInPlaceReader: @unchecked Sendable {
    private unowned let engine: TailEngine

    init(_ engine: TailEngine) {
        self.engine = engine
    }

    /// Whether the engine read everything the open files' `watches` announced (false: wake its task).
    func read(_ watches: Set<Int32>) -> Bool {
        engine.eventLoop?.preconditionInEventLoop()
        return engine.readInPlace(watches: watches)
    }
}

/// The opener task's scan interval, changed by the engine when inotify starts or is given up.
/// nil: inotify makes the looks.
final class TailScanInterval: Sendable {
    private let value: Mutex<Duration?>

    init(_ interval: Duration?) {
        value = Mutex(interval)
    }

    func get() -> Duration? { value.withLock { $0 } }
    func set(_ interval: Duration?) { value.withLock { $0 = interval } }
}
