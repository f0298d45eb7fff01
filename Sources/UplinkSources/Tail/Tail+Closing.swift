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

/// Closing files for good (rotated away and read to their end) and parking quiet ones at their paths (descriptor
/// closed, state kept, opened again when they change).
extension TailEngine {
    // MARK: Closing

    /// Closes detached files that are read to their end and were quiet for a while; forgets them once their lines
    /// are acknowledged.
    nonisolated(nonsending) func closeFinishedDetached() async {
        let now = clock.now
        let open = awake.filter { $0.isDetached && !$0.isClosed }
        let excess = open.count - Self.maximumDetachedOpen
        for (index, file) in open.enumerated() {
            guard let detachedAt = file.detachedAt, file.atEnd else { continue }
            let quiet = max(detachedAt, file.lastGrowth).advanced(by: Self.detachedLinger) <= now
            let forced = index < excess
            guard quiet || forced else { continue }
            let deleted = !file.isParked && (FileStatus(descriptor: file.descriptor)?.links ?? 0) == 0
            guard deleted || discovery.count > file.detachedAtDiscovery || forced else { continue }
            // Quiet when last read, but written since (read in a turn that then spent long on other files): read on.
            if !file.isParked, !forced, changedSinceRead(file) { continue }
            // Its writer is gone: an unfinished last line is complete now.
            await flushPending(file)
            if stopped { return }
            logger.debug(
                "tail source: closing \(file.path) (\(deleted ? "deleted" : "rotated away"))",
                metadata: ["path": "\(file.path)", "inode": "\(file.inode.inode)"])
            if !deleted { rememberClosed(file) }
            closeFile(file)
        }
        if fileSet.removeClosedAndAcknowledged() { checkpointer.markChanged() }
    }

    func rememberClosed(_ file: TailedFile) {
        remember(TailCheckpoint(
            inode: file.inode, fingerprint: file.fingerprint, originID: file.originID, offset: file.emittedOffset,
            path: file.path))
    }

    /// Where a file not followed now stands, should it be found (adopted) later.
    func remember(_ checkpoint: TailCheckpoint) {
        recentlyClosed.remember(checkpoint)
    }

    func closeFile(_ file: TailedFile) {
        if let watch = file.modifyWatch {
            inotify?.unwatchModifications(watch)
            file.modifyWatch = nil
        }
        file.close()
        fileSet.closed(file)
        syncParked(file.path)
    }

    // MARK: Parking

    /// Whether a file may be parked once quiet for `parkAfter`.
    func mayPark(_ file: TailedFile) -> Bool {
        guard file.isOpen, !file.neverPark, !file.isDetached, file.atEnd, !file.splitter.hasCarry,
            file.multiline?.hasPending != true, !file.hasUnacknowledged, fileSet.isActive(file)
        else { return false }
        if case .none = file.copyState { return true }
        return false
    }

    /// Parks the files read to their end and quiet for `parkAfter`: closes their descriptors and watches; their
    /// directory's watch (added for the first parked file in it) reports their next modification by name.
    func parkQuiet() {
        let now = clock.now
        for file in awake where mayPark(file) && file.lastGrowth.advanced(by: Self.parkAfter) <= now {
            // Announced first, so a write after the `fstat` below is reported by name; one before it shows in the size.
            if let error = inotify?.setParked(file.path, true) {
                // A directory that cannot be watched (no read permission on it) keeps its files open instead.
                if error.code == EACCES || error.code == ENOENT || error.code == ENOTDIR {
                    file.lastGrowth = now
                } else {
                    fallBackToPolling(error)
                }
                continue
            }
            guard let status = FileStatus(descriptor: file.descriptor), status.size == file.readOffset,
                status.links > 0
            else {
                inotify?.setParked(file.path, false)
                file.lastGrowth = now
                continue
            }
            if let watch = file.modifyWatch {
                inotify?.unwatchModifications(watch)
                file.modifyWatch = nil
            }
            file.park(modified: status.modified)
            fileSet.awakeChanged()
            logger.trace("tail source: parked \(file.path)", metadata: ["path": "\(file.path)"])
        }
    }

    /// Opens a parked file again (it changed); it is read in this turn.
    func unpark(_ file: TailedFile) {
        guard file.isParked, !file.isClosed else { return }
        guard case .success(let descriptor) = SourceFiles.openForReading(file.path) else { return }
        guard FileStatus(descriptor: descriptor)?.identity == file.inode else {
            SourceFiles.closeDescriptor(descriptor)  // another file is there now: the opener reports it
            return
        }
        file.unpark(descriptor: descriptor, now: clock.now)
        syncParked(file.path)
        fileSet.awakeChanged()
        if let watcher = inotify {
            switch watcher.watchModifications(of: descriptor) {
            case .success(let watch): file.modifyWatch = watch
            case .failure(let error): fallBackToPolling(error)
            }
        }
    }

    /// Tells the watcher whether a parked file is at `path` (paths change hands in any order during a rotation).
    func syncParked(_ path: String) {
        guard let watcher = inotify else { return }
        let file = fileSet.file(at: path)
        if let error = watcher.setParked(path, file.map { $0.isParked && !$0.isDetached && $0.path == path } ?? false) {
            fallBackToPolling(error)
        }
    }

    /// Looks at every parked file (`stat` of its path) and opens those that changed. Polling does this every poll
    /// interval; with inotify only after lost events.
    func checkParked() {
        for file in files where file.isParked && !file.isDetached {
            guard let status = FileStatus(path: file.path), status.identity == file.inode else { continue }
            if file.changedSinceParked(status) { unpark(file) }
        }
    }
}
