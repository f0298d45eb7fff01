/// The ring's side of `buffer.persist`: moving frames to disk, reading them back for sending, and the operations the
/// agent's persistence service performs (the `RecordRingDisk`, `PersistentBuffer` in `UplinkPersistentBuffer`, holds
/// the files; the ring does no file I/O).
///
/// Cursors with a disk: frames below `headSequence` that were moved out of memory are on disk only; the send cursor
/// may point there (`sendSequence < headSequence`), and then frames are read back from disk until it reaches the
/// oldest frame in memory. `spilledThrough` says up to where memory frames have a copy on disk (always all of them
/// in `always` mode). Kept frames (log tailers, which checkpoint on acknowledgement) are never written with a body:
/// the tailer reads them again from its file after a restart.
extension RecordRing {
    /// Moves the oldest frames to disk (those without a copy there are written) until `needed` bytes fit.
    /// False when the disk refused one (budget full with `drop_newest`); frames moved until then stay moved.
    func evictToDiskLocked(toFit needed: Int, _ state: inout State) -> Bool {
        while state.used + needed > capacity {
            let (length, sourceWord) = header(at: state.head)
            if state.headSequence > state.spilledThrough {
                switch writeMemoryFrameLocked(at: state.head, length: length, sourceWord: sourceWord, &state) {
                case .written: break
                case .refused: return false
                case .failed:
                    // The system refused the write: the frame is lost, as without a disk.
                    let sourceIndex = Int(sourceWord & ~Self.keptFlag)
                    state.sources[sourceIndex].droppedOldest += 1
                }
                state.spilledThrough = state.headSequence
            }
            releaseHeadLocked(&state, frameBytes: Self.frameHeaderBytes + length)
        }
        return true
    }

    /// `always` mode: writes the frame about to be appended (a placeholder for a kept frame). False when the disk
    /// budget refused it (`drop_newest`): the frame is refused too.
    func writeThroughLocked(_ frame: UnsafeRawBufferPointer, sourceWord: UInt32, _ state: inout State) -> Bool {
        guard state.disk?.settings.mode == .always else { return true }
        let kept = sourceWord & Self.keptFlag != 0
        let outcome = state.disk!.append(
            sequence: state.nextSequence, sourceWord: sourceWord & ~Self.keptFlag, placeholder: kept, frame,
            UnsafeRawBufferPointer(start: nil, count: 0), acknowledged: state.acknowledged)
        if outcome == .refused && !kept { return false }
        state.spilledThrough = state.nextSequence
        return true
    }

    /// Writes the memory frame at `offset` (sequence `headSequence` or later; the caller knows which).
    private func writeMemoryFrameLocked(
        at offset: Int, length: Int, sourceWord: UInt32, sequence: UInt64? = nil, _ state: inout State
    ) -> RecordRingDiskWrite {
        let bodyStart = advance(offset, by: Self.frameHeaderBytes)
        let firstLength = min(length, capacity - bodyStart)
        return state.disk!.append(
            sequence: sequence ?? state.headSequence, sourceWord: sourceWord & ~Self.keptFlag, placeholder: false,
            UnsafeRawBufferPointer(start: storage + bodyStart, count: firstLength),
            UnsafeRawBufferPointer(start: storage, count: length - firstLength), acknowledged: state.acknowledged)
    }

    /// Delivers frames from disk while the send cursor is below the oldest frame in memory. Returns false when
    /// `maxBytes` stopped it (the caller stops too); true when the cursor reached memory.
    func readFromDiskLocked(
        maxBytes: Int, frames: inout Int, bytes: inout Int, _ state: inout State,
        _ body: (_ sequence: UInt64, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Void
    ) -> Bool {
        guard state.sendSequence < state.headSequence else { return true }
        let empty = UnsafeRawBufferPointer(start: nil, count: 0)
        let result = state.disk!.read(
            from: state.sendSequence, below: state.headSequence, maxBytes: maxBytes - bytes, mayExceed: frames == 0
        ) { sequence, frame in
            body(sequence, frame, empty)
        }
        frames += result.frames
        bytes += result.bytes
        if result.next >= state.headSequence {
            moveSendCursorLocked(to: state.headSequence, &state)
            return true
        }
        state.sendSequence = result.next
        return false
    }

    /// Up to `maxBytes` leading bytes of the oldest unacknowledged frame when the ring moved it to disk (it is older
    /// than every frame in memory); nil when memory holds the oldest one, or the disk cannot deliver it.
    func oldestDiskFramePrefixLocked(maxBytes: Int, _ state: inout State) -> [UInt8]? {
        let oldestUnacknowledged = state.acknowledged &+ 1
        guard state.disk != nil, oldestUnacknowledged < state.headSequence, state.disk!.hasData(above: state.acknowledged)
        else { return nil }
        var prefix: [UInt8]?
        _ = state.disk!.read(from: oldestUnacknowledged, below: state.headSequence, maxBytes: 0, mayExceed: true) { _, frame in
            prefix = Array(frame.prefix(maxBytes))
        }
        return prefix
    }

    /// Puts the send cursor at `target` (at most the oldest frame in memory), with a disk.
    func moveSendCursorLocked(to target: UInt64, _ state: inout State) {
        state.sendSequence = min(max(target, 1), state.headSequence)
        if state.sendSequence == state.headSequence { state.send = state.head }
    }

    /// Writes the frames in memory below `limit` that have no copy on disk yet (kept frames excepted); returns how
    /// many were written.
    private func spillLocked(below limit: UInt64, _ state: inout State) -> Int {
        guard state.disk != nil else { return 0 }
        var offset = state.head
        var sequence = state.headSequence
        var written = 0
        let end = min(limit, state.nextSequence)
        while sequence < end {
            let (length, sourceWord) = header(at: offset)
            if sequence > state.spilledThrough {
                if sourceWord & Self.keptFlag == 0 {
                    let outcome = writeMemoryFrameLocked(
                        at: offset, length: length, sourceWord: sourceWord, sequence: sequence, &state)
                    if outcome != .written { break }
                    written += 1
                }
                state.spilledThrough = sequence
            }
            offset = advance(offset, by: Self.frameHeaderBytes + length)
            sequence += 1
        }
        return written
    }

    // MARK: For the agent's persistence service

    /// `spill` mode: writes to disk the frames below `sequence` that are still unacknowledged and have no copy
    /// there yet. The service passes the sequence the ring was at `spill_after` ago. Returns the frames written.
    @discardableResult
    public func spillUnacknowledged(below sequence: UInt64) -> Int {
        state.withLock { spillLocked(below: sequence, &$0) }
    }

    /// The sequence the next append gets.
    public var nextSequence: UInt64 {
        state.withLock { $0.nextSequence }
    }

    /// Flushes what was written to disk since the last call (`fsync`, outside the lock): the group commit of
    /// `always` mode.
    public func syncPersistentBuffer() {
        guard let sync = state.withLock({ $0.disk?.takeSync() }) else { return }
        sync()
    }

    /// At shutdown, after the uplink drained: writes every unacknowledged frame in memory to disk, flushes, and
    /// records the clean shutdown, so the next start continues the same stream. The ring then lives in memory only.
    public func closePersistentBuffer() {
        state.withLock { state in
            guard state.disk != nil else { return }
            _ = spillLocked(below: state.nextSequence, &state)
            state.disk!.closeCleanly(next: state.nextSequence)
            state.closedDiskStatistics = state.disk!.statistics
            state.disk = nil
            state.sendSequence = max(state.sendSequence, state.headSequence)
            if state.sendSequence == state.headSequence { state.send = state.head }
        }
    }

    /// The disk side's counters; nil without `buffer.persist`.
    public func persistentStatistics() -> PersistentBufferStatistics? {
        state.withLock { $0.disk?.statistics ?? $0.closedDiskStatistics }
    }

    /// The disk side's settings; nil without `buffer.persist` (or once closed).
    public var persistentSettings: PersistentBufferSettings? {
        state.withLock { $0.disk?.settings }
    }
}
