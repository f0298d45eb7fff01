import UplinkCore
import UplinkFiles

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
    nonisolated(nonsending) func read(_ file: TailedFile) async -> Bool {
        for _ in 0..<Self.chunksPerTurn {
            if stopped || Task.isCancelled { return true }
            let count: Int
            switch SourceFiles.read(file.descriptor, into: buffer, at: file.readOffset) {
            case .success(let read):
                count = read
                file.readFailing = false
            case .failure(let error):
                file.readFailing = true
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
            guard let fingerprint = file.verifiedFingerprint(scratch: scratch) else {
                await restart(file, reason: "its first bytes changed")
                continue
            }
            adopt(fingerprint, of: file)
            file.fingerprintVerifiedThisTurn = true
            file.atEnd = false
            file.lastGrowth = clock.now
            await sendRead(count, of: file)
            // A short read of a regular file ends at its end: no second `pread` to be told so. (Data appended since
            // wakes another turn.)
            if count < buffer.count {
                file.atEnd = true
                return true
            }
        }
        return false
    }

    /// Takes `fingerprint`, verified as an extension of the file's, as the file's own (a checkpoint change when it
    /// grew).
    private func adopt(_ fingerprint: TailFingerprint, of file: TailedFile) {
        guard fingerprint != file.fingerprint else { return }
        file.fingerprint = fingerprint
        checkpointer.markChanged()
    }

    /// Sends the lines of the `count` bytes just read into `buffer` at `file.readOffset` (from the file, or from its
    /// copy), and moves the offset past them.
    @inline(__always)
    private nonisolated(nonsending) func sendRead(_ count: Int, of file: TailedFile) async {
        let base = file.readOffset
        file.readOffset += UInt64(count)
        statistics.bytesRead += UInt64(count)
        await send(file) { batch, timestamp in
            statistics.truncatedLines += self.split(
                file, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), base: base, timestamp, &batch)
        }
    }

    /// Splits a chunk into `batch` (through the multi-line joiner when configured); returns how many lines were cut
    /// to `max_line_bytes`, for the caller to count once the lines are sent.
    @inline(__always)
    private func split(
        _ file: TailedFile, _ chunk: UnsafeRawBufferPointer, base: UInt64, _ timestamp: Int64,
        _ batch: inout LogLineBatch
    ) -> Int {
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
        return truncated
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
    private nonisolated(nonsending) func send(_ file: TailedFile, _ fill: (inout LogLineBatch, Int64) -> Void) async {
        let batch = takeBatch(for: file, fill)
        if !batch.isEmpty { await emit(batch, from: file) }
        self.batch = batch
    }

    /// The engine's reusable batch, emptied, labelled with `file`'s fields and origin, and filled by `fill` (with the
    /// time now); the caller puts it back (`self.batch = batch`) once sent, so its storage is reused without a copy.
    private func takeBatch(for file: TailedFile, _ fill: (inout LogLineBatch, Int64) -> Void) -> LogLineBatch {
        var batch = self.batch
        self.batch = LogLineBatch(source: name, fields: [], originID: 0)  // `batch` is the only reference now
        batch.removeAll()
        batch.fields = file.fields
        batch.originID = file.originID
        fill(&batch, WallClock.nowNanoseconds())
        return batch
    }

    /// Hands a batch to the sink (waiting for space) and queues each line's sequence and end offset for the
    /// acknowledgement.
    private nonisolated(nonsending) func emit(_ batch: LogLineBatch, from file: TailedFile) async {
        record(await sink.emitWaitingForSpace(batch), of: batch, from: file)
    }

    /// Queues the sequence and end offset of each line of `batch` the sink stored (`outcomes`) for the
    /// acknowledgement, and counts them.
    private func record(_ outcomes: [AppendOutcome], of batch: LogLineBatch, from file: TailedFile) {
        var appended = 0
        let outcomes = outcomes.prefix(batch.count)
        var index = 0
        while index < outcomes.count {
            switch outcomes[index] {
            case .appended(let first):
                // Lines stored one after the other are queued together (the usual case: the whole batch).
                var end = index + 1
                while end < outcomes.count, case .appended(let sequence) = outcomes[end], sequence == first + UInt64(end - index) {
                    end += 1
                }
                lastAppendedSequence = max(lastAppendedSequence, first + UInt64(end - 1 - index))
                file.enqueue(firstSequence: first, offsets: batch.lines[index..<end].lazy.map(\.originOffset))
                appended += end - index
                index = end - 1
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
            index += 1
        }
        if outcomes.count < batch.count { stopped = true }
        statistics.records += appended
    }

    /// Reads the new lines of the open files whose watches reported a modification (`watches`), on `L`, while the
    /// task waits idle (`TailInPlaceReader`): what a turn would do after a write, without waking the task. Only the
    /// common case: files at their paths (no rotated file still being read), not possible copies, without multi-line
    /// joining or a partial line, each read ending at a newline before the chunk is full, with room in the buffer
    /// for its lines. Anything else (nothing to read, a truncation, more data, a partial line, a full buffer, a change
    /// the opener saw) is the task's: returns false, and the caller wakes the task for a whole turn. A file is read
    /// whole or not at all, so what was read before declining is accounted for and the turn goes on from there.
    func readInPlace(watches: Set<Int32>) -> Bool {
        guard !stopped, !opener.hasEvents else { return false }
        var reported: [TailedFile] = []
        for file in fileSet.awake {
            guard !file.isDetached else { return false }
            if let watch = file.modifyWatch, watches.contains(watch) { reported.append(file) }
        }
        guard !reported.isEmpty else { return false }
        for file in reported {
            guard file.isOpen, !file.readFailing, file.multiline == nil, !file.splitter.hasCarry,
                case .none = file.copyState, mayRead(file)
            else { return false }
        }
        for file in reported {
            guard readInPlace(file) else { return false }
        }
        acknowledge()
        // Of the idle wait's deadlines (`idleDeadline`), the read can only have brought the checkpoint's next look
        // forward (lines now wait for their acknowledgement); the others are later or untouched (parking after the
        // last growth; no partial line, multi-line record or rotated file here).
        let awaiting = reported.contains(where: \.hasUnacknowledged)
        if let look = checkpointer.nextLook(now: clock.now, awaitingAcknowledgement: awaiting) {
            wakeup.armTimer(deadline: look)
        }
        return !stopped
    }

    /// One file of `readInPlace(watches:)`: reads it, and sends its lines when the read ends at a newline before the
    /// chunk is full, its first bytes are unchanged and the lines fit; otherwise changes nothing. Whether it sent.
    private func readInPlace(_ file: TailedFile) -> Bool {
        // A read that finds nothing may follow a truncation, which the turn looks for.
        guard case .success(let count) = SourceFiles.read(file.descriptor, into: buffer, at: file.readOffset),
            count > 0, count < buffer.count, buffer[count - 1] == UInt8(ascii: "\n"),
            let fingerprint = file.verifiedFingerprint(scratch: scratch)
        else { return false }
        // Ends at a newline and nothing was carried (nor joined): the splitter keeps no state from it, so declining
        // below is clean.
        var truncated = 0
        let batch = takeBatch(for: file) { batch, timestamp in
            truncated = split(file, UnsafeRawBufferPointer(rebasing: buffer[0..<count]), base: file.readOffset, timestamp, &batch)
        }
        defer { self.batch = batch }
        guard let outcomes = sink.emitIfRoom(batch) else { return false }
        statistics.truncatedLines += truncated
        statistics.readsInPlace += 1
        adopt(fingerprint, of: file)
        file.readOffset += UInt64(count)
        statistics.bytesRead += UInt64(count)
        file.atEnd = true
        file.lastGrowth = clock.now
        record(outcomes, of: batch, from: file)
        return !stopped
    }

    /// Sends an unfinished last line and a multi-line record being built, as they are.
    nonisolated(nonsending) func flushPending(_ file: TailedFile) async {
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
    nonisolated(nonsending) func flushTimedOut() async {
        let now = clock.now
        for file in awake where file.isOpen && file.atEnd {
            let partialLineDue = file.splitter.hasCarry && file.lastGrowth.advanced(by: config.partialLineTimeout) <= now
            var recordDue: Bool { file.multiline?.lastAppend.map { $0.advanced(by: config.multilineTimeout) <= now } ?? false }
            guard partialLineDue || recordDue else { continue }
            // Read to its end when last read, but the turn may have spent longer than the timeout on other files since
            // (a backlog behind a slow collector): what came meanwhile may finish the line, so it is read first.
            if changedSinceRead(file) { continue }
            if partialLineDue {
                let timestamp = WallClock.nowNanoseconds()
                await send(file) { batch, _ in
                    var truncated = 0
                    Self.appendCarry(of: file, timestamp: timestamp, now: now, &batch, &truncated)
                    statistics.truncatedLines += truncated
                }
            }
            if recordDue {
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

    /// Whether `file`, read to its end when last read, changed since: it grew, or (followed at its path) it was
    /// truncated, which the next read of it handles (the rest of its partial line is then in the copy, if any). Then
    /// it is no longer at its end. Never while its reads fail, nor for a file that waits as a possible or known copy
    /// (`TailCopyDetector`): either would be taken up at once, and again, without being read.
    func changedSinceRead(_ file: TailedFile) -> Bool {
        guard !file.readFailing, case .none = file.copyState, let size = FileStatus(descriptor: file.descriptor)?.size,
            size > file.readOffset || (size < file.readOffset && !file.isDetached)
        else { return false }
        file.atEnd = false
        return true
    }

    /// Whether the file was truncated (it is shorter than what was read, or its first bytes changed, possibly
    /// rewritten to the same size); then it restarts.
    nonisolated(nonsending) func checkTruncated(_ file: TailedFile) async -> Bool {
        // Data was read this turn up to the file's end and its first bytes compared after it: the file was not shorter
        // than the offset then, and a second `pread` of its first bytes would show the same. A truncation since is a
        // change that wakes the next turn (inotify, or the next poll), whose read finds nothing and looks here. So
        // neither `fstat` nor `pread`: at ordinary rates that is one system call fewer per line.
        if file.fingerprintVerifiedThisTurn { return false }
        if let status = FileStatus(descriptor: file.descriptor), status.size < file.readOffset {
            await restart(file, reason: "it is shorter than the offset read")
            return true
        }
        guard let fingerprint = file.verifiedFingerprint(scratch: scratch) else {
            await restart(file, reason: "its first bytes changed")
            return true
        }
        adopt(fingerprint, of: file)
        return false
    }

    /// The file was truncated: what was read of the old content is sent (finished from its copy when logrotate's
    /// `copytruncate` left one), then it is read from offset 0 as a new incarnation with a new origin id.
    nonisolated(nonsending) func restart(_ file: TailedFile, reason: String) async {
        let continuation = await finishFromCopy(file)
        await flushPending(file)
        if let continuation {
            copies.continueIncarnation(of: file, in: continuation)
            checkpointer.markChanged()
        }
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
    /// yet are in the copy. Finds it (`TailCopyDetector.copy(of:in:)`: in the file's directory, a
    /// regular file, another inode, with the incarnation's first bytes; the newest such) and reads it from the offset
    /// reached to its end, as the same incarnation (same
    /// origin, offsets going on), so nothing is sent twice. Only lines written
    /// between the copy and the truncation are lost, which no reader can see. A copy already compressed (logrotate's
    /// `compress` without `delaycompress`, done before the tailer looked) does not match and is not read.
    ///
    /// When the copy is a file `paths` matches too (`app.log*` and logrotate's `app.log.1`), it is not read as a file
    /// of its own: the incarnation goes on in it (returned, to be continued with `TailCopyDetector.continueIncarnation`
    /// once the source's last partial line is sent), so every line is sent once.
    private nonisolated(nonsending) func finishFromCopy(_ file: TailedFile) async -> TailedFile? {
        guard let copy = copies.copy(of: file, in: fileSet) else { return nil }
        let copyDescriptor = copy.descriptor
        let copyPath = copy.path
        let from = file.readOffset
        while !stopped && !Task.isCancelled {
            let count = SourceFiles.readCount(copyDescriptor, into: buffer, at: file.readOffset)
            guard count > 0 else { break }
            await sendRead(count, of: file)
        }
        if file.readOffset > from {
            statistics.copiesFinished += 1
            logger.info(
                "tail source: \(file.path) was copied and truncated; read its last \(file.readOffset - from) bytes from the copy \(copyPath)",
                metadata: ["path": "\(file.path)", "copy": "\(copyPath)"])
        }
        if let followed = copy.followed { return followed }
        // A copy the globs match but not followed yet: followed from here on as the continuation.
        defer { SourceFiles.closeDescriptor(copyDescriptor) }
        guard discovery.matches(copyPath), let status = FileStatus(descriptor: copyDescriptor)
        else { return nil }
        if fileSet.file(at: copyPath) == nil, case .success(let opened)? = opener.track(copyPath) {
            // The path may hold another file by now (the next rotation moved the copy on and began a new copy
            // there): that one is a new file of its own, and this incarnation must not go on in it.
            adopt(opened, at: copyPath, initial: false)
            if opened.status.identity == status.identity, let adopted = fileSet.file(at: copyPath), adopted.inode == status.identity {
                return adopted
            }
        }
        // Watched already (its opening is on the way as an event), taken by another file a moment ago, or moved on:
        // when it is adopted, wherever it is found, it continues where this incarnation stands, as a file found
        // again does.
        remember(TailCheckpoint(
            inode: status.identity, fingerprint: file.fingerprint, originID: file.originID,
            offset: min(file.readOffset, status.size), path: copyPath))
        return nil
    }

    /// Whether `file` may be read now: not while it may be, or is, a copy of a followed incarnation
    /// (`TailCopyDetector`).
    func mayRead(_ file: TailedFile) -> Bool {
        switch copies.mayRead(file, among: files) {
        case .wait:
            return false
        case .read(let checkpointMoved):
            if checkpointMoved { checkpointer.markChanged() }
            return true
        }
    }
}
