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

/// Tells the copies that logrotate's `copytruncate` (or any copy-then-truncate) makes of followed files from files of
/// their own, and finds the copy of a file that was truncated. It owns every change of a file's `TailCopyState`.
///
/// Two cases need it. When `paths` matches the copy too (`app.log*` and `app.log.1`), a new file that begins like a
/// followed incarnation is that incarnation's copy and must not be read again from 0: it waits while the incarnation is
/// followed and takes it over when the source is truncated (`continueIncarnation`) or ends. And when the source is
/// truncated before its last lines were read, they are in the copy beside it (`copy(of:in:)`),
/// whether `paths` matches it or not.
///
/// The engine hands it the followed files at each call; the time comes from the engine's clock. Used by the engine's
/// task only.
final class TailCopyDetector {
    /// Longest wait for the first 256 bytes of a new file that may be a copy being written (it is shorter, and begins
    /// like a followed file): after it, the file is read as one of its own.
    static let decisionLimit: Duration = .seconds(1)

    /// What `decisionLimit` and the wait of an empty file are measured on (`clock.now`).
    let clock: any TickClock
    /// Says whether a file found in a directory may be read (`TailConfig.allowedRealPaths`).
    let opener: TailOpener
    /// Told when a file turns out to be a copy, and where an incarnation goes on.
    let logger: Logger
    /// How long a new file that is still empty stays undecided (the engine's `parkAfter`): until then no copy is being
    /// written into it, and after it, it is an ordinary file (which may be parked).
    let emptyFileWait: Duration
    /// The first bytes of the file being decided (`TailFingerprint.maximumLength`).
    private let scratch: UnsafeMutableRawBufferPointer

    /// A detector whose time is `clock`'s, whose directory searches `opener` allows, and that decides an empty file
    /// is no copy once it was quiet for `emptyFileWait`.
    init(clock: any TickClock, opener: TailOpener, logger: Logger, emptyFileWait: Duration) {
        self.clock = clock
        self.opener = opener
        self.logger = logger
        self.emptyFileWait = emptyFileWait
        scratch = .allocate(byteCount: TailFingerprint.maximumLength, alignment: 16)
    }

    deinit {
        scratch.deallocate()
    }

    // MARK: Copies that `paths` matches

    /// Whether a file may be read now (`mayRead`).
    enum Decision: Equatable {
        /// Not now: it may be a copy, or is one whose incarnation is followed.
        case wait
        /// Read it. `checkpointMoved`: it was a copy whose incarnation ended without a truncation, and it is now an
        /// ordinary file standing at the end of what was sent from its source (its checkpoint changed).
        case read(checkpointMoved: Bool)
    }

    /// Whether `file` may be read now. A new file that may be a copy of an incarnation of one of `files` waits until
    /// its first 256 bytes show whether it is one (at most `decisionLimit` while it is shorter and begins like a
    /// followed file beside it); a copy waits for its source's truncation, or its end.
    func mayRead(_ file: TailedFile, among files: [TailedFile]) -> Decision {
        switch file.copyState {
        case .none:
            return .read(checkpointMoved: false)
        case .copy(let source, let origin):
            if !source.isClosed && source.originID == origin {
                file.atEnd = true
                return .wait
            }
            // The incarnation ended without a truncation (rotated away and closed, or restarted from another copy):
            // what this copy holds was sent from the source.
            let size = FileStatus(descriptor: file.descriptor)?.size ?? 0
            let end = source.originID == origin ? min(source.emittedOffset, size) : size
            file.originID = origin
            file.fingerprint = source.fingerprint
            file.readOffset = end
            file.emittedOffset = end
            file.acknowledgedOffset = end
            file.copyState = .none
            return .read(checkpointMoved: true)
        case .undecided(let since):
            return decide(file, since: since, among: files) ? .read(checkpointMoved: false) : .wait
        }
    }

    /// When an undecided file that began like a followed one is read as a file of its own, if no more of it comes
    /// (`decisionLimit` after it first had bytes); nil for any other file. The engine wakes up for it when idle.
    func decisionDeadline(of file: TailedFile) -> ContinuousClock.Instant? {
        guard case .undecided(let since?) = file.copyState else { return nil }
        return since.advanced(by: Self.decisionLimit)
    }

    private func decide(_ file: TailedFile, since: ContinuousClock.Instant?, among files: [TailedFile]) -> Bool {
        let count = SourceFiles.readCount(file.descriptor, into: scratch, at: 0)
        if count == 0 {
            // Still empty: no copy is being written into it (it may be parked like any quiet file).
            if file.lastGrowth.advanced(by: emptyFileWait) <= clock.now { file.copyState = .none }
            file.atEnd = true
            return false
        }
        let full = TailFingerprint.maximumLength
        if count >= full {
            let hash = TailFingerprint.fnv1a(UnsafeRawBufferPointer(rebasing: scratch[0..<full]))
            var source: TailedFile?
            for other in files where other !== file && !other.isClosed && other.inode != file.inode {
                guard other.fingerprint.length == full, other.fingerprint.hash == hash, case .none = other.copyState else { continue }
                if source == nil || (other.isOpen && !other.isDetached) { source = other }
            }
            if let source {
                file.copyState = .copy(of: source, origin: source.originID)
                file.atEnd = true
                logger.debug(
                    "tail source: \(file.path) begins like \(source.path): a copy, not read as a file of its own",
                    metadata: ["path": "\(file.path)", "source": "\(source.path)"])
                return false
            }
            file.copyState = .none
            return true
        }
        let now = clock.now
        if count > 0, (since ?? now).advanced(by: Self.decisionLimit) > now,
            beginsLikeFollowedFile(file, count: count, among: files)
        {
            if since == nil { file.copyState = .undecided(since: now) }
            file.atEnd = true
            return false
        }
        file.copyState = .none
        return true
    }

    /// Whether the `count` bytes in `scratch` (the first of `file`, fewer than 256) are the beginning of one of `files`
    /// beside it with a full fingerprint: then `file` may be a copy being written. A parked one is not opened to
    /// compare: it counts as a match.
    private func beginsLikeFollowedFile(_ file: TailedFile, count: Int, among files: [TailedFile]) -> Bool {
        let directory = AtomicFile.parentDirectory(of: file.path)
        var other = [UInt8](repeating: 0, count: count)
        for candidate in files where candidate !== file && !candidate.isClosed && candidate.inode != file.inode {
            guard candidate.fingerprint.length == TailFingerprint.maximumLength,
                AtomicFile.parentDirectory(of: candidate.path) == directory
            else { continue }
            if candidate.isParked { return true }
            let read = other.withUnsafeMutableBytes { SourceFiles.readCount(candidate.descriptor, into: $0, at: 0) }
            if read == count, other.withUnsafeBytes({ memcmp($0.baseAddress!, scratch.baseAddress!, count) == 0 }) {
                return true
            }
        }
        return false
    }

    // MARK: The copy of a truncated file

    /// The copy of a truncated file's incarnation (`copy(of:in:)`).
    struct Copy {
        /// Where to read it: `followed`'s own descriptor when it is followed, otherwise one opened for the caller, who
        /// closes it.
        var descriptor: Int32
        /// Where it was found.
        var path: String
        /// The followed file that is the copy (known as one, or still undecided); nil: a file not followed.
        var followed: TailedFile?
    }

    /// The copy of `file`'s incarnation, which was truncated: a followed file known as its copy, or else the newest
    /// file beside it that holds the incarnation's first bytes (`findCopy`). A file found that is followed counts only
    /// while undecided: one read on its own already (or parked) sent these lines, and reading them again would repeat
    /// them. nil: no copy to finish the incarnation from.
    func copy(of file: TailedFile, in followed: TailFileSet) -> Copy? {
        let known = followed.all.first { candidate in
            guard candidate.isOpen, case .copy(let source, let origin) = candidate.copyState else { return false }
            return source === file && origin == file.originID
        }
        if let known { return Copy(descriptor: known.descriptor, path: known.path, followed: known) }
        guard let (descriptor, path, inode) = findCopy(of: file) else { return nil }
        guard let followed = followed.file(inode: inode) else { return Copy(descriptor: descriptor, path: path, followed: nil) }
        SourceFiles.closeDescriptor(descriptor)
        guard followed.isOpen, case .undecided = followed.copyState else { return nil }
        return Copy(descriptor: followed.descriptor, path: path, followed: followed)
    }

    /// The newest file beside `file` that holds its incarnation's content, opened for reading. Only for an
    /// incarnation with a full-length fingerprint: a few shared first bytes (a short header line) could match another
    /// file, whose end would then be sent as this one's.
    private func findCopy(of file: TailedFile) -> (Int32, String, FileIdentity)? {
        guard file.fingerprint.length >= TailFingerprint.maximumLength else { return nil }
        let slash = file.path.lastIndex(of: "/")
        let directory = slash.map { String(file.path[..<$0]) } ?? "."
        let prefix = slash.map { String(file.path[..<file.path.index(after: $0)]) } ?? ""
        var best: (descriptor: Int32, path: String, modified: Int64, inode: FileIdentity)?
        for entry in TailFS.list(directory.isEmpty ? "/" : directory) where entry.isDirectory != true && !entry.isSymbolicLink {
            let path = prefix + entry.name
            // A copy may be shorter than what was read: the writer appended between logrotate's copy and its
            // truncate, and the tailer read that too. Nothing is left to read from it then, but when `paths` matches
            // it, it must still be known as this incarnation's copy, or it would be read again from 0.
            guard path != file.path, let status = FileStatus(path: path), status.isRegular, status.identity != file.inode
            else { continue }
            guard case .success(let descriptor) = SourceFiles.openForReading(path) else { continue }
            guard opener.allows(descriptor: descriptor, path: path, inode: status.identity) else {
                SourceFiles.closeDescriptor(descriptor)
                continue
            }
            let modified = FileStatus(descriptor: descriptor)?.modified ?? 0
            guard file.fingerprint.verified(descriptor: descriptor, scratch: scratch) != nil, modified >= (best?.modified ?? .min)
            else {
                SourceFiles.closeDescriptor(descriptor)
                continue
            }
            if let previous = best { SourceFiles.closeDescriptor(previous.descriptor) }
            best = (descriptor, path, modified, status.identity)
        }
        return best.map { ($0.descriptor, $0.path, $0.inode) }
    }

    /// The incarnation of `source`, read from its copy `copy` up to `source.readOffset`, goes on in `copy`: same
    /// origin, offsets and lines waiting for acknowledgement; `copy` is read from there like any file. Its checkpoint
    /// changed.
    func continueIncarnation(of source: TailedFile, in copy: TailedFile) {
        let size = FileStatus(descriptor: copy.descriptor)?.size ?? 0
        let end = min(source.readOffset, size)
        copy.originID = source.originID
        copy.fingerprint = source.fingerprint
        copy.readOffset = end
        copy.emittedOffset = min(source.emittedOffset, end)
        if source.emittedOffset <= size {
            copy.pending = source.pending
            copy.acknowledgedOffset = source.acknowledgedOffset
            source.pending.removeAll()
        } else {
            // Lines past the copy's end were read from the source before its truncation: they stay its own.
            copy.pending.removeAll()
            copy.acknowledgedOffset = end
        }
        copy.splitter.reset()
        copy.multiline?.reset()
        copy.copyState = .none
        copy.atEnd = false
        logger.debug(
            "tail source: \(copy.path) is the copy of \(source.path); its incarnation goes on there at offset \(end)",
            metadata: ["path": "\(copy.path)", "source": "\(source.path)", "origin": "\(copy.originID)"])
    }
}
