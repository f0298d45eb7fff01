import UplinkCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension TailEngine {
    /// Reads up to `chunksPerTurn` chunks of `file` and sends their lines. Returns whether it reached the end
    /// of the file (false: data is probably left).
    func read(_ file: TailedFile) async -> Bool {
        for _ in 0..<Self.chunksPerTurn {
            if stopped || Task.isCancelled { return true }
            let count = SourceFiles.read(file.descriptor, into: buffer, at: file.readOffset)
            if count < 0 {
                let error = SourceFiles.Errno(errno)
                if !file.warnedReadError {
                    file.warnedReadError = true
                    logger.warning("tail source: cannot read \(file.path): \(error)", metadata: ["path": "\(file.path)"])
                }
                file.atEnd = true
                return true
            }
            if count == 0 {
                file.atEnd = true
                return true
            }
            // Truncated and rewritten since the last check? Then these bytes may be from the new content: start over.
            guard let fingerprint = file.fingerprint.verified(descriptor: file.descriptor, scratch: scratch) else {
                await restart(file, reason: "its first bytes changed")
                continue
            }
            if fingerprint != file.fingerprint {
                file.fingerprint = fingerprint
                checkpointer.markChanged()
            }
            file.fingerprintVerifiedThisTurn = true
            file.atEnd = false
            file.lastGrowth = clock.now
            let base = file.readOffset
            file.readOffset += UInt64(count)
            statistics.bytesRead += UInt64(count)
            await send(file) { batch, timestamp in
                self.split(file, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), base: base, timestamp, &batch)
            }
            // A short read of a regular file ends at its end: no second `pread` to be told so. (Data appended since
            // wakes another turn.)
            if count < buffer.count {
                file.atEnd = true
                return true
            }
        }
        return false
    }

    /// Splits a chunk into `batch` (through the multi-line joiner when configured).
    @inline(__always)
    private func split(
        _ file: TailedFile, _ chunk: UnsafeRawBufferPointer, base: UInt64, _ timestamp: Int64,
        _ batch: inout LogLineBatch
    ) {
        var truncated = 0
        if file.multiline == nil {
            file.splitter.split(chunk, base: base) { message, endOffset, originalLength in
                Self.append(message, endOffset, originalLength, timestamp, &batch, &truncated)
            }
        } else {
            let now = clock.now
            file.splitter.split(chunk, base: base) { message, endOffset, originalLength in
                file.multiline!.add(message, endOffset: endOffset, originalLength: originalLength, now: now) {
                    message, endOffset, originalLength in
                    Self.append(message, endOffset, originalLength, timestamp, &batch, &truncated)
                }
            }
        }
        statistics.truncatedLines += truncated
    }

    /// Adds one line, marking it `truncated` (with its full length) when it was cut to `max_line_bytes`.
    @inline(__always)
    private static func append(
        _ message: UnsafeRawBufferPointer, _ endOffset: UInt64, _ originalLength: Int, _ timestamp: Int64,
        _ batch: inout LogLineBatch, _ truncated: inout Int
    ) {
        if originalLength > message.count {
            truncated += 1
            batch.append(
                message: message, timestamp: timestamp, originOffset: endOffset,
                extraField: "truncated", decimal: UInt64(originalLength))
        } else {
            batch.append(message: message, timestamp: timestamp, originOffset: endOffset)
        }
    }

    /// Fills the engine's batch for `file` with `fill` and sends it.
    private func send(_ file: TailedFile, _ fill: (inout LogLineBatch, Int64) -> Void) async {
        var batch = self.batch
        self.batch = LogLineBatch(source: name, fields: [], originID: 0)  // `batch` is the only reference now
        batch.removeAll()
        batch.fields = file.fields
        batch.originID = file.originID
        fill(&batch, WallClock.nowNanoseconds())
        if !batch.isEmpty { await emit(batch, from: file) }
        self.batch = batch
    }

    /// Hands a batch to the sink (waiting for space) and queues each line's sequence and end offset for the
    /// acknowledgement.
    private func emit(_ batch: LogLineBatch, from file: TailedFile) async {
        let outcomes = await sink.emitWaitingForSpace(batch)
        var appended = 0
        for (index, outcome) in outcomes.prefix(batch.count).enumerated() {
            switch outcome {
            case .appended(let sequence):
                lastAppendedSequence = max(lastAppendedSequence, sequence)
                file.enqueue(sequence: sequence, offset: batch.lines[index].originOffset)
                appended += 1
            case .rejectedOversize:
                // Never storable: handled once the lines before it are acknowledged.
                statistics.rejectedOversize += 1
                file.enqueue(sequence: lastAppendedSequence, offset: batch.lines[index].originOffset)
                if !file.warnedOversize {
                    file.warnedOversize = true
                    logger.warning(
                        "tail source: a record of \(file.path) is larger than the whole buffer and was left out; lower max_line_bytes or enlarge the buffer",
                        metadata: ["path": "\(file.path)"])
                }
            case .droppedNewest:
                stopped = true  // only after cancellation: the rest is read again on the next start
            }
            if stopped { break }
        }
        if outcomes.count < batch.count { stopped = true }
        statistics.records += appended
    }

    /// Sends an unfinished last line and a multi-line record being built, as they are.
    func flushPending(_ file: TailedFile) async {
        guard file.splitter.hasCarry || file.multiline?.hasPending == true else { return }
        let now = clock.now
        await send(file) { batch, timestamp in
            var truncated = 0
            Self.appendCarry(of: file, timestamp: timestamp, now: now, &batch, &truncated)
            file.multiline?.flush { message, endOffset, originalLength in
                Self.append(message, endOffset, originalLength, timestamp, &batch, &truncated)
            }
            statistics.truncatedLines += truncated
        }
    }

    /// Adds the file's unfinished last line to `batch` as a line of its own, or to the multi-line record being
    /// built (which may complete the one before it).
    private static func appendCarry(
        of file: TailedFile, timestamp: Int64, now: ContinuousClock.Instant, _ batch: inout LogLineBatch,
        _ truncated: inout Int
    ) {
        file.splitter.flushCarry(endOffset: file.readOffset) { message, endOffset, originalLength in
            if file.multiline == nil {
                append(message, endOffset, originalLength, timestamp, &batch, &truncated)
            } else {
                file.multiline!.add(message, endOffset: endOffset, originalLength: originalLength, now: now) {
                    message, endOffset, originalLength in
                    append(message, endOffset, originalLength, timestamp, &batch, &truncated)
                }
            }
        }
    }

    /// Sends partial lines and multi-line records whose timeouts passed (for files read to their end).
    func flushTimedOut() async {
        let now = clock.now
        for file in awake where file.isOpen && file.atEnd {
            if file.splitter.hasCarry, file.lastGrowth.advanced(by: config.partialLineTimeout) <= now {
                let timestamp = WallClock.nowNanoseconds()
                await send(file) { batch, _ in
                    var truncated = 0
                    Self.appendCarry(of: file, timestamp: timestamp, now: now, &batch, &truncated)
                    statistics.truncatedLines += truncated
                }
            }
            if let last = file.multiline?.lastAppend, last.advanced(by: config.multilineTimeout) <= now {
                await send(file) { batch, timestamp in
                    var truncated = 0
                    file.multiline?.flush { message, endOffset, originalLength in
                        Self.append(message, endOffset, originalLength, timestamp, &batch, &truncated)
                    }
                    statistics.truncatedLines += truncated
                }
            }
            if stopped { return }
        }
    }

    /// Whether the file was truncated (it is shorter than what was read, or its first bytes changed, possibly
    /// rewritten to the same size); then it restarts.
    func checkTruncated(_ file: TailedFile) async -> Bool {
        if let status = TailFS.status(descriptor: file.descriptor), status.size < file.readOffset {
            await restart(file, reason: "it is shorter than the offset read")
            return true
        }
        // Data was read this turn and its first bytes compared after it: a second `pread` of them would show the same.
        if file.fingerprintVerifiedThisTurn { return false }
        guard let fingerprint = file.fingerprint.verified(descriptor: file.descriptor, scratch: scratch) else {
            await restart(file, reason: "its first bytes changed")
            return true
        }
        if fingerprint != file.fingerprint {
            file.fingerprint = fingerprint
            checkpointer.markChanged()
        }
        return false
    }

    /// The file was truncated: what was read of the old content is sent (finished from its copy when logrotate's
    /// `copytruncate` left one), then it is read from offset 0 as a new incarnation with a new origin id.
    func restart(_ file: TailedFile, reason: String) async {
        let continuation = await finishFromCopy(file)
        await flushPending(file)
        if let continuation { continueIncarnation(of: file, in: continuation) }
        statistics.truncations += 1
        logger.info(
            "tail source: \(file.path) was truncated (\(reason)); reading it from the start as a new incarnation",
            metadata: ["path": "\(file.path)"])
        file.restart(
            originID: newTailOriginID(), fingerprint: TailFingerprint.current(descriptor: file.descriptor, scratch: scratch),
            now: clock.now)
        checkpointer.markChanged()
    }
}

extension TailEngine {
    // MARK: Copies left by copytruncate

    /// `copytruncate` (logrotate's, or any copy-then-truncate): the lines written before the copy that were not read
    /// yet are in the copy. Finds it in the file's directory (a regular file, another inode, with the incarnation's
    /// first bytes; the newest such) and reads it from the offset reached to its end, as the same incarnation (same
    /// origin, offsets going on), so nothing is sent twice. Only lines written
    /// between the copy and the truncation are lost, which no reader can see. A copy already compressed (logrotate's
    /// `compress` without `delaycompress`, done before the tailer looked) does not match and is not read.
    ///
    /// When the copy is a file `paths` matches too (`app.log*` and logrotate's `app.log.1`), it is not read as a file
    /// of its own: the incarnation goes on in it (returned, to be continued with `continueIncarnation` once the
    /// source's last partial line is sent), so every line is sent once.
    private func finishFromCopy(_ file: TailedFile) async -> TailedFile? {
        // A followed file known to be this incarnation's copy, or one still undecided that the search finds.
        var followed = files.first { candidate in
            guard candidate.isOpen, case .copy(let source, let origin) = candidate.copyState else { return false }
            return source === file && origin == file.originID
        }
        let copyDescriptor: Int32
        let copyPath: String
        if let followed {
            copyDescriptor = followed.descriptor
            copyPath = followed.path
        } else {
            guard let (descriptor, path, inode) = findCopy(of: file) else { return nil }
            if let known = byInode[inode] {
                SourceFiles.closeDescriptor(descriptor)
                // A copy read on its own already (or parked) sent these lines; reading them again would repeat them.
                guard known.isOpen, case .undecided = known.copyState else { return nil }
                followed = known
                copyDescriptor = known.descriptor
            } else {
                copyDescriptor = descriptor
            }
            copyPath = path
        }
        let from = file.readOffset
        while !stopped && !Task.isCancelled {
            let count = SourceFiles.read(copyDescriptor, into: buffer, at: file.readOffset)
            guard count > 0 else { break }
            let base = file.readOffset
            file.readOffset += UInt64(count)
            statistics.bytesRead += UInt64(count)
            await send(file) { batch, timestamp in
                self.split(file, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), base: base, timestamp, &batch)
            }
        }
        if file.readOffset > from {
            statistics.copiesFinished += 1
            logger.info(
                "tail source: \(file.path) was copied and truncated; read its last \(file.readOffset - from) bytes from the copy \(copyPath)",
                metadata: ["path": "\(file.path)", "copy": "\(copyPath)"])
        }
        if let followed { return followed }
        // A copy the globs match but not followed yet: followed from here on as the continuation.
        defer { SourceFiles.closeDescriptor(copyDescriptor) }
        guard TailGlob.matches(copyPath, globs, exclude: exclude), let status = TailFS.status(descriptor: copyDescriptor)
        else { return nil }
        if activeByPath[copyPath] == nil, case .success(let opened)? = opener.track(copyPath) {
            adopt(opened, at: copyPath, initial: false)
            if let adopted = activeByPath[copyPath], adopted.inode == opened.status.inode { return adopted }
        }
        // Watched already (its opening is on the way as an event) or taken by another file a moment ago: when it is
        // adopted, it continues where this incarnation stands, as a file found again does.
        remember(TailCheckpoint(
            inode: status.inode, fingerprint: file.fingerprint, originID: file.originID,
            offset: min(file.readOffset, status.size), path: copyPath))
        return nil
    }

    /// The incarnation of `source`, read from its copy `copy` up to `source.readOffset`, goes on in `copy`: same
    /// origin, offsets and lines waiting for acknowledgement; `copy` is read from there like any file.
    func continueIncarnation(of source: TailedFile, in copy: TailedFile) {
        let size = TailFS.status(descriptor: copy.descriptor)?.size ?? 0
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
        checkpointer.markChanged()
        logger.debug(
            "tail source: \(copy.path) is the copy of \(source.path); its incarnation goes on there at offset \(end)",
            metadata: ["path": "\(copy.path)", "source": "\(source.path)", "origin": "\(copy.originID)"])
    }

    // MARK: Copies that `paths` matches

    /// Whether `file` may be read now. A new file that may be a copy of a followed incarnation (logrotate's
    /// `copytruncate`, with `paths` matching the copy) waits until its first 256 bytes show whether it is one (at most
    /// `copyDecisionLimit` while it is shorter and begins like a followed file beside it); a copy waits for its
    /// source's truncation, or its end.
    func mayRead(_ file: TailedFile) -> Bool {
        switch file.copyState {
        case .none:
            return true
        case .copy(let source, let origin):
            if !source.isClosed && source.originID == origin {
                file.atEnd = true
                return false
            }
            // The incarnation ended without a truncation (rotated away and closed, or restarted from another copy):
            // what this copy holds was sent from the source.
            let size = TailFS.status(descriptor: file.descriptor)?.size ?? 0
            let end = source.originID == origin ? min(source.emittedOffset, size) : size
            file.originID = origin
            file.fingerprint = source.fingerprint
            file.readOffset = end
            file.emittedOffset = end
            file.acknowledgedOffset = end
            file.copyState = .none
            checkpointer.markChanged()
            return true
        case .undecided(let since):
            return decideCopy(file, since: since)
        }
    }

    private func decideCopy(_ file: TailedFile, since: ContinuousClock.Instant?) -> Bool {
        let count = SourceFiles.read(file.descriptor, into: scratch, at: 0)
        if count == 0 {
            // Still empty: no copy is being written into it (it may be parked like any quiet file).
            if file.lastGrowth.advanced(by: Self.parkAfter) <= clock.now { file.copyState = .none }
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
        if count > 0, (since ?? now).advanced(by: Self.copyDecisionLimit) > now, beginsLikeFollowedFile(file, count: count) {
            if since == nil { file.copyState = .undecided(since: now) }
            file.atEnd = true
            return false
        }
        file.copyState = .none
        return true
    }

    /// Whether the `count` bytes in `scratch` (the first of `file`, fewer than 256) are the beginning of a followed
    /// file beside it with a full fingerprint: then `file` may be a copy being written. A parked one is not opened to
    /// compare: it counts as a match.
    private func beginsLikeFollowedFile(_ file: TailedFile, count: Int) -> Bool {
        let directory = AtomicFile.parentDirectory(of: file.path)
        var other = [UInt8](repeating: 0, count: count)
        for candidate in files where candidate !== file && !candidate.isClosed && candidate.inode != file.inode {
            guard candidate.fingerprint.length == TailFingerprint.maximumLength,
                AtomicFile.parentDirectory(of: candidate.path) == directory
            else { continue }
            if candidate.isParked { return true }
            let read = other.withUnsafeMutableBytes { SourceFiles.read(candidate.descriptor, into: $0, at: 0) }
            if read == count, other.withUnsafeBytes({ memcmp($0.baseAddress!, scratch.baseAddress!, count) == 0 }) {
                return true
            }
        }
        return false
    }

    /// The newest file beside `file` that holds its incarnation's content, opened for reading. Only for an
    /// incarnation with a full-length fingerprint: a few shared first bytes (a short header line) could match another
    /// file, whose end would then be sent as this one's.
    private func findCopy(of file: TailedFile) -> (Int32, String, TailFS.Inode)? {
        guard file.fingerprint.length >= TailFingerprint.maximumLength else { return nil }
        let slash = file.path.lastIndex(of: "/")
        let directory = slash.map { String(file.path[..<$0]) } ?? "."
        let prefix = slash.map { String(file.path[..<file.path.index(after: $0)]) } ?? ""
        var best: (descriptor: Int32, path: String, modified: Int, inode: TailFS.Inode)?
        for entry in TailFS.list(directory.isEmpty ? "/" : directory) where entry.isDirectory != true && !entry.isSymbolicLink {
            let path = prefix + entry.name
            // A copy may be shorter than what was read: the writer appended between logrotate's copy and its
            // truncate, and the tailer read that too. Nothing is left to read from it then, but when `paths` matches
            // it, it must still be known as this incarnation's copy, or it would be read again from 0.
            guard path != file.path, let status = TailFS.status(path: path), status.isRegular, status.inode != file.inode
            else { continue }
            guard case .success(let descriptor) = SourceFiles.openForReading(path) else { continue }
            guard opener.allows(descriptor: descriptor, path: path, inode: status.inode) else {
                SourceFiles.closeDescriptor(descriptor)
                continue
            }
            var info = stat()
            let modified = fstat(descriptor, &info) == 0 ? Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec) : 0
            guard file.fingerprint.verified(descriptor: descriptor, scratch: scratch) != nil, modified >= (best?.modified ?? Int.min)
            else {
                SourceFiles.closeDescriptor(descriptor)
                continue
            }
            if let previous = best { SourceFiles.closeDescriptor(previous.descriptor) }
            best = (descriptor, path, modified, status.inode)
        }
        return best.map { ($0.descriptor, $0.path, $0.inode) }
    }
}
