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
            let count = TailFS.read(file.descriptor, into: buffer, at: file.readOffset)
            if count < 0 {
                let error = TailFS.Errno(errno)
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
                checkpointDirty = true
            }
            file.atEnd = false
            file.lastGrowth = clock.now
            let base = file.readOffset
            file.readOffset += UInt64(count)
            statistics.bytesRead += UInt64(count)
            await send(file) { batch, timestamp in
                self.split(file, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), base: base, timestamp, &batch)
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
        for file in files where !file.isClosed && file.atEnd {
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
        guard let fingerprint = file.fingerprint.verified(descriptor: file.descriptor, scratch: scratch) else {
            await restart(file, reason: "its first bytes changed")
            return true
        }
        if fingerprint != file.fingerprint {
            file.fingerprint = fingerprint
            checkpointDirty = true
        }
        return false
    }

    /// The file was truncated: what was read of the old content is sent (finished from its copy when logrotate's
    /// `copytruncate` left one), then it is read from offset 0 as a new incarnation with a new origin id.
    func restart(_ file: TailedFile, reason: String) async {
        await finishFromCopy(file)
        await flushPending(file)
        statistics.truncations += 1
        logger.info(
            "tail source: \(file.path) was truncated (\(reason)); reading it from the start as a new incarnation",
            metadata: ["path": "\(file.path)"])
        file.restart(
            originID: newTailOriginID(), fingerprint: TailFingerprint.current(descriptor: file.descriptor, scratch: scratch),
            now: clock.now)
        checkpointDirty = true
    }
}

extension TailEngine {
    // MARK: Checkpoint file

    /// Reads the checkpoint file, if any. A file that cannot be read or parsed gives one warning and is ignored.
    func loadCheckpoints() {
        guard let path = checkpointPath else {
            logger.debug("tail source: no state directory, checkpoints are kept in memory only")
            return
        }
        let bytes: [UInt8]
        switch TailFS.readAll(path) {
        case .success(let content): bytes = content
        case .failure(let error):
            if error.code != ENOENT {
                logger.warning("tail source: cannot read the checkpoint file \(path) (\(error)); starting without checkpoints")
            }
            return
        }
        switch TailCheckpointFile.decode(bytes) {
        case .success(let checkpoints):
            for checkpoint in checkpoints {
                loadedCheckpoints[checkpoint.inode] = checkpoint
                checkpointedPaths.insert(checkpoint.path)
            }
        case .failure(let error):
            logger.warning(
                "tail source: the checkpoint file \(path) is corrupt (\(error)); ignoring it and starting without checkpoints"
            )
        }
    }

    /// Writes the checkpoints when they changed and the interval passed (or now, with `force`).
    func writeCheckpoints(force: Bool) {
        guard checkpointDirty else { return }
        let now = clock.now
        guard force || lastCheckpointWrite.advanced(by: config.checkpointInterval) <= now else { return }
        lastCheckpointWrite = now
        checkpointDirty = false
        guard let path = checkpointPath else { return }
        let checkpoints = files.map {
            TailCheckpoint(
                inode: $0.inode, fingerprint: $0.fingerprint, originID: $0.originID, offset: $0.acknowledgedOffset,
                path: $0.path)
        }
        if let error = TailFS.writeAtomically(path, TailCheckpointFile.encode(checkpoints)) {
            checkpointDirty = true
            if !warnedCheckpointWrite {
                warnedCheckpointWrite = true
                logger.warning("tail source: cannot write the checkpoint file \(path): \(error); retrying")
            }
        } else if warnedCheckpointWrite {
            warnedCheckpointWrite = false
            logger.info("tail source: the checkpoint file \(path) is written again")
        }
    }

    /// `copytruncate` (logrotate's, or any copy-then-truncate): the lines written before the copy that were not read
    /// yet are in the copy. Finds it in the file's directory (a regular file, another inode, with the incarnation's
    /// first bytes, at least as long as what was read; the newest such) and reads it from the offset reached to its
    /// end, as the same incarnation (same origin, offsets going on), so nothing is sent twice. Only lines written
    /// between the copy and the truncation are lost, which no reader can see. A copy already compressed (logrotate's
    /// `compress` without `delaycompress`, done before the tailer looked) does not match and is not read.
    private func finishFromCopy(_ file: TailedFile) async {
        guard let (copy, path) = findCopy(of: file) else { return }
        defer { TailFS.closeDescriptor(copy) }
        let from = file.readOffset
        while !stopped && !Task.isCancelled {
            let count = TailFS.read(copy, into: buffer, at: file.readOffset)
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
                "tail source: \(file.path) was copied and truncated; read its last \(file.readOffset - from) bytes from the copy \(path)",
                metadata: ["path": "\(file.path)", "copy": "\(path)"])
        }
    }

    /// The newest file beside `file` that holds its incarnation's content, opened for reading. Only for an
    /// incarnation with a full-length fingerprint: a few shared first bytes (a short header line) could match another
    /// file, whose end would then be sent as this one's.
    private func findCopy(of file: TailedFile) -> (Int32, String)? {
        guard file.fingerprint.length >= TailFingerprint.maximumLength else { return nil }
        let slash = file.path.lastIndex(of: "/")
        let directory = slash.map { String(file.path[..<$0]) } ?? "."
        let prefix = slash.map { String(file.path[..<file.path.index(after: $0)]) } ?? ""
        var best: (descriptor: Int32, path: String, modified: Int)?
        for entry in TailFS.list(directory.isEmpty ? "/" : directory) where entry.isDirectory != true && !entry.isSymbolicLink {
            let path = prefix + entry.name
            guard path != file.path, let status = TailFS.status(path: path), status.isRegular,
                status.inode != file.inode, status.size >= file.readOffset
            else { continue }
            guard case .success(let descriptor) = TailFS.openForReading(path) else { continue }
            var info = stat()
            let modified = fstat(descriptor, &info) == 0 ? Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec) : 0
            guard file.fingerprint.verified(descriptor: descriptor, scratch: scratch) != nil, modified >= (best?.modified ?? Int.min)
            else {
                TailFS.closeDescriptor(descriptor)
                continue
            }
            if let previous = best { TailFS.closeDescriptor(previous.descriptor) }
            best = (descriptor, path, modified)
        }
        return best.map { ($0.descriptor, $0.path) }
    }
}
