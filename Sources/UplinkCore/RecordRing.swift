import DequeModule
import Synchronization

/// Identifies a source registered with a `RecordRing`; frames carry it so drops can be counted per source.
public struct SourceID: Hashable, Sendable {
    public let rawValue: UInt32
}

/// The bounded circular buffer between the sources and the uplink.
///
/// It stores encoded frames back to back in one reserved mapping of `capacity` bytes (each frame behind an
/// 8-byte header: body length and source id), numbers them with consecutive sequence numbers starting at 1,
/// and keeps three cursors:
///
/// - **acknowledged**: the highest sequence the collector confirmed; frames up to it are released.
/// - **sent**: the next frame the uplink will copy out; rewound to the oldest retained frame on reconnect.
/// - **written**: the sequence the next append gets.
///
/// Frames stay until acknowledged, not merely sent. When an append does not fit, the `OverflowPolicy` drops the
/// oldest frames (sent or not) or refuses the new one; every drop is counted per source. Frames appended with
/// `appendWaitingForSpace` (sources whose data is durable elsewhere, such as log tailers that checkpoint on
/// acknowledgement) are never dropped to make room: when one of them is the oldest frame, an append that would
/// have to drop it is refused instead (counted as `droppedNewest`). Appends that wait for room take turns, in the
/// order they began to wait; appends that never wait are not held back by them.
///
/// Memory follows the backlog: pages of the storage cost memory only from their first write, and the chunks that
/// acknowledged frames leave behind are given back to the system (see `RingMemory`).
///
/// With a disk side (`buffer.persist`: a `RecordRingDisk`, which `UplinkPersistentBuffer`'s `PersistentBuffer` is)
/// frames also live on disk (`RecordRing+Persistence.swift`): a full ring moves its oldest frames to disk instead of
/// dropping them (the disk budget and `buffer.overflow` decide what is dropped there), the send cursor may lie below
/// the oldest frame in memory (those frames are read back from disk), and numbering continues where the previous run
/// stopped.
///
/// All methods are safe to call from many threads at once. The lock is held only to copy bytes.
public final class RecordRing: Sendable {
    /// 64 MiB.
    public static let defaultCapacity = 64 * 1024 * 1024
    /// Bytes of bookkeeping stored in front of every frame.
    public static let frameHeaderBytes = 8
    /// Set in a frame header's source word for frames that must not be dropped to make room.
    static let keptFlag: UInt32 = 0x8000_0000

    /// Size of the buffer in bytes, headers included.
    public let capacity: Int
    /// What happens to an append that does not fit.
    public let policy: OverflowPolicy

    // Only touched with `state` locked; `state.memory` owns the mapping.
    nonisolated(unsafe) let storage: UnsafeMutableRawPointer
    let state: Mutex<State>
    /// `state.acknowledged`, raised after each acknowledgement, for the sources waiting for one.
    private let acknowledgements = MonotonicSignal<UInt64>()

    /// Creates an empty ring. `capacity` must be at least 64 bytes.
    ///
    /// `memoryReleaseLap`: memory of acknowledged regions goes back to the system while the writer takes at least
    /// this long to go round the ring (default 10 s; `.zero` always, as tests use it). See `RingMemory`.
    ///
    /// `persistentBuffer`: the opened disk side (`buffer.persist`); the ring then numbers from its
    /// `nextSequence` and sends what it holds first. Default none: the ring lives in memory only.
    public init(
        capacity: Int = RecordRing.defaultCapacity, policy: OverflowPolicy = .dropOldest,
        memoryReleaseLap: Duration = .seconds(10), persistentBuffer: (any RecordRingDisk)? = nil
    ) {
        precondition(capacity >= 64, "ring capacity must be at least 64 bytes")
        self.capacity = capacity
        self.policy = policy
        let memory = RingMemory(capacity: capacity, slowLap: memoryReleaseLap)
        self.storage = memory.map()
        var state = State(memory: memory)
        if let persistentBuffer {
            state.nextSequence = persistentBuffer.nextSequence
            state.headSequence = persistentBuffer.nextSequence
            state.spilledThrough = persistentBuffer.nextSequence - 1
            state.sendSequence = 1
            state.disk = persistentBuffer
        }
        self.state = Mutex(state)
    }

    deinit {
        state.withLock { $0.memory.unmap(storage) }
    }

    // MARK: Sources

    /// Registers a source by name and returns the id its frames are appended under.
    /// Registering the same name twice returns the same id.
    public func registerSource(_ name: String) -> SourceID {
        state.withLock { state in
            if let index = state.sources.firstIndex(where: { $0.name == name }) {
                return SourceID(rawValue: UInt32(index))
            }
            state.sources.append(SourceCounters(name: name))
            return SourceID(rawValue: UInt32(state.sources.count - 1))
        }
    }

    // MARK: Appending

    /// Appends one frame and returns its sequence number, or why it was not stored. Never blocks beyond the lock.
    @discardableResult
    public func append(_ frame: UnsafeRawBufferPointer, source: SourceID) -> AppendOutcome {
        let (outcome, waiter, granted) = state.withLock { state in
            let outcome = appendLocked(frame, source: source, state: &state, mayDrop: true, kept: false)
            // Dropping larger old frames to fit this one may have freed room enough for a waiting append.
            return (outcome, takeDataWaiter(outcome, &state), state.spaceWaiters.isEmpty ? [] : grantSpaceLocked(&state))
        }
        waiter?()
        for waiting in granted { waiting.continuation.resume(returning: true) }
        return outcome
    }

    /// Appends one frame.
    @discardableResult
    public func append(_ frame: [UInt8], source: SourceID) -> AppendOutcome {
        frame.withUnsafeBytes { append($0, source: source) }
    }

    /// Appends frames stored back to back in `frames` (frame `i` ends at `ends[i]`) if all of them fit now, without
    /// waiting and without passing anyone: no append waits for room, and they fit beside the room set aside for
    /// waiting appends. Then it returns their outcomes, as `appendWaitingForSpace(frames:ends:source:)` would; otherwise
    /// (and for a frame larger than the ring) nil, and nothing was stored. For a caller that must not wait, such as a
    /// handler on an event loop, with `appendWaitingForSpace` to fall back on.
    public func appendIfRoom(frames: [UInt8], ends: [Int], source: SourceID) -> [AppendOutcome]? {
        let (outcomes, dataWaiter) = frames.withUnsafeBytes { bytes in
            state.withLock { state -> ([AppendOutcome]?, (@Sendable () -> Void)?) in
                guard state.spaceWaiters.isEmpty else { return (nil, nil) }
                var needed = 0
                var start = 0
                for end in ends {
                    let frameNeeds = Self.frameHeaderBytes + end - start
                    guard frameNeeds <= capacity else { return (nil, nil) }
                    needed += frameNeeds
                    start = end
                }
                guard state.used + state.reservedForWaiters + needed <= capacity else { return (nil, nil) }
                var outcomes: [AppendOutcome] = []
                outcomes.reserveCapacity(ends.count)
                var appendedAny = false
                start = 0
                for end in ends {
                    let frame = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
                    let outcome = appendLocked(frame, source: source, state: &state, mayDrop: false, kept: true)
                    if case .appended = outcome { appendedAny = true }
                    outcomes.append(outcome)
                    start = end
                }
                return (outcomes, appendedAny ? takeDataWaiter(.appended(sequence: 0), &state) : nil)
            }
        }
        dataWaiter?()
        return outcomes
    }

    /// Appends one frame, waiting (without dropping anything) until the ring has room for it, in turn with other
    /// appends waiting for room (see `appendWaitingForSpace(frames:ends:source:)`). Returns `.rejectedOversize` at
    /// once for a frame larger than the ring. Cancellation ends the wait and returns `.droppedNewest`, counted as such.
    public func appendWaitingForSpace(_ frame: [UInt8], source: SourceID) async -> AppendOutcome {
        await appendWaitingForSpace(frames: frame, ends: [frame.count], source: source)[0]
    }

    /// Appends frames stored back to back in `frames` (frame `i` ends at `ends[i]`), in order, waiting (without
    /// dropping anything) whenever the ring has no room for the next one. Takes the lock once per run of frames
    /// that fit, not once per frame. Returns one outcome per frame: `.rejectedOversize` for a frame larger than
    /// the ring; after cancellation the frames not yet stored are `.droppedNewest`, counted as such.
    ///
    /// Appends that wait take turns: room that acknowledgements free goes to the waiting appends in the order they
    /// began to wait (it is set aside for each one's next frame, so nothing that comes later takes it first), and
    /// while others wait an append goes on for at most `fairShareBytes` before it queues again behind them. So a
    /// busy source cannot keep a quiet one out of a full ring.
    public nonisolated(nonsending) func appendWaitingForSpace(frames: [UInt8], ends: [Int], source: SourceID) async -> [AppendOutcome] {
        var outcomes: [AppendOutcome] = []
        outcomes.reserveCapacity(ends.count)
        var granted = false
        while outcomes.count < ends.count {
            let (dataWaiter, blocked, woken) = frames.withUnsafeBytes { bytes in
                state.withLock { state -> ((@Sendable () -> Void)?, (needed: Int, ahead: Bool)?, [SpaceWaiter]) in
                    var appendedAny = false
                    var blocked: (needed: Int, ahead: Bool)?
                    var taken = 0
                    while outcomes.count < ends.count {
                        let index = outcomes.count
                        let start = index == 0 ? 0 : ends[index - 1]
                        let frame = UnsafeRawBufferPointer(rebasing: bytes[start..<ends[index]])
                        let needed = Self.frameHeaderBytes + frame.count
                        // Room set aside for this frame when it was granted: it is this append's own again.
                        let ownGrant = granted
                        if granted {
                            state.reservedForWaiters -= needed
                            granted = false
                        }
                        if needed <= capacity && !mayTake(needed, granted: ownGrant, takenSinceWait: taken, state) {
                            if Task.isCancelled {
                                let remaining = ends.count - outcomes.count
                                state.sources[Int(source.rawValue)].droppedNewest += remaining
                                outcomes.append(contentsOf: repeatElement(.droppedNewest, count: remaining))
                                break
                            }
                            // A granted frame that no longer fits (an append that never waits took the room) keeps
                            // its place at the head of the queue.
                            blocked = (needed, ownGrant)
                            break
                        }
                        let outcome = appendLocked(frame, source: source, state: &state, mayDrop: false, kept: true)
                        if case .appended = outcome {
                            appendedAny = true
                            taken += needed
                        }
                        outcomes.append(outcome)
                    }
                    let dataWaiter = appendedAny ? takeDataWaiter(.appended(sequence: 0), &state) : nil
                    // Room this append leaves, or a grant it gave back, may let waiting appends in.
                    return (dataWaiter, blocked, grantSpaceLocked(&state))
                }
            }
            dataWaiter?()
            for waiter in woken { waiter.continuation.resume(returning: true) }
            if let blocked { granted = await waitForSpace(blocked.needed, ahead: blocked.ahead) }
        }
        return outcomes
    }

    /// While other appends wait for room, how many bytes an append that got in may go on taking before it queues
    /// behind them again: a sixteenth of the ring (at least one frame, which every turn takes).
    var fairShareBytes: Int { capacity / 16 }

    /// Whether an append that waits for space may take `needed` bytes now: they fit beside the room set aside for
    /// granted waiters, and the append does not pass appends still queued, except that one that has taken fewer than
    /// `fairShareBytes` since it last waited may finish its share. Room beside what is set aside is anyone's: the
    /// granted waiters lose nothing by it, and an append that need not wait is not made to hop through its executor.
    /// A granted frame only has to fit.
    private func mayTake(_ needed: Int, granted: Bool, takenSinceWait: Int, _ state: State) -> Bool {
        guard state.used + state.reservedForWaiters + needed <= capacity else { return false }
        if granted || state.spaceWaiters.isEmpty { return true }
        return takenSinceWait > 0 && takenSinceWait < fairShareBytes
    }

    private func takeDataWaiter(_ outcome: AppendOutcome, _ state: inout State) -> (@Sendable () -> Void)? {
        guard case .appended = outcome, let waiter = state.dataWaiter else { return nil }
        state.dataWaiter = nil
        return waiter
    }

    private func appendLocked(
        _ frame: UnsafeRawBufferPointer, source: SourceID, state: inout State, mayDrop: Bool, kept: Bool
    ) -> AppendOutcome {
        let sourceIndex = Int(source.rawValue)
        let needed = Self.frameHeaderBytes + frame.count
        if needed > capacity || frame.count > Int(UInt32.max) {
            state.sources[sourceIndex].rejectedOversize += 1
            return .rejectedOversize
        }
        if state.used + needed > capacity {
            if state.hasDisk {
                // Moving frames to disk loses nothing, whatever the policy: the disk budget applies it.
                guard mayDrop, canDropOldest(toFit: needed, state), evictToDiskLocked(toFit: needed, &state) else {
                    state.sources[sourceIndex].droppedNewest += 1
                    return .droppedNewest
                }
            } else {
                guard mayDrop, policy == .dropOldest, canDropOldest(toFit: needed, state) else {
                    state.sources[sourceIndex].droppedNewest += 1
                    return .droppedNewest
                }
                while state.used + needed > capacity {
                    dropOldestLocked(&state)
                }
            }
        }
        let sourceWord = kept ? source.rawValue | Self.keptFlag : source.rawValue
        if state.hasDisk, !writeThroughLocked(frame, sourceWord: sourceWord, &state) {
            state.sources[sourceIndex].droppedNewest += 1
            return .droppedNewest
        }
        state.memory.noteWritten(at: state.tail, count: needed)
        if state.tail + needed <= capacity {
            // Common case: the frame does not wrap around the end of the storage.
            let destination = storage + state.tail
            destination.storeBytes(of: UInt32(frame.count).littleEndian, as: UInt32.self)
            destination.storeBytes(of: sourceWord.littleEndian, toByteOffset: 4, as: UInt32.self)
            if let start = frame.baseAddress, frame.count > 0 {
                (destination + Self.frameHeaderBytes).copyMemory(from: start, byteCount: frame.count)
            }
        } else {
            var header = (UInt32(frame.count).littleEndian, sourceWord.littleEndian)
            withUnsafeBytes(of: &header) { copyIn($0, at: state.tail) }
            copyIn(frame, at: advance(state.tail, by: Self.frameHeaderBytes))
        }
        state.tail = advance(state.tail, by: needed)
        state.used += needed
        let sequence = state.nextSequence
        state.nextSequence += 1
        if state.hasDisk {
            let next = state.nextSequence
            state.disk!.noteAssigned(next: next)
        }
        state.sources[sourceIndex].appended += 1
        return .appended(sequence: sequence)
    }

    /// Whether dropping oldest frames can make room for `needed` bytes without dropping a kept frame.
    func canDropOldest(toFit needed: Int, _ state: State) -> Bool {
        var freed = 0
        var offset = state.head
        var sequence = state.headSequence
        while state.used - freed + needed > capacity && sequence < state.nextSequence {
            let (length, sourceWord) = header(at: offset)
            if sourceWord & Self.keptFlag != 0 { return false }
            freed += Self.frameHeaderBytes + length
            offset = advance(offset, by: Self.frameHeaderBytes + length)
            sequence += 1
        }
        return state.used - freed + needed <= capacity
    }

    private func dropOldestLocked(_ state: inout State) {
        let (length, sourceWord) = header(at: state.head)
        let sourceIndex = Int(sourceWord & ~Self.keptFlag)
        state.sources[sourceIndex].droppedOldest += 1
        releaseHeadLocked(&state, frameBytes: Self.frameHeaderBytes + length)
    }

    /// Releases, in one step, the frames before the newest send mark that `sequence` acknowledges whole: the ring
    /// then reads no frame header to release them. Walking the headers frame by frame instead costs a cache miss per
    /// frame once a bulk transfer's acknowledgements trail the writer by megabytes.
    private func releaseToSendMarkLocked(through sequence: UInt64, _ state: inout State) {
        guard let mark = state.sendMarks.take(acknowledgedThrough: sequence, headSequence: state.headSequence,
                                               nextSequence: state.nextSequence) else { return }
        let released = mark.sequence == state.nextSequence
            ? state.used
            : (mark.offset - state.head + capacity) % capacity
        state.head = mark.offset
        state.used -= released
        state.headSequence = mark.sequence
        if !state.hasDisk && state.sendSequence < state.headSequence {
            state.send = state.head
            state.sendSequence = state.headSequence
        }
    }

    func releaseHeadLocked(_ state: inout State, frameBytes: Int) {
        let wasNextToSend = state.sendSequence == state.headSequence
        state.head = advance(state.head, by: frameBytes)
        state.used -= frameBytes
        state.headSequence += 1
        // With a disk the send cursor stays: a frame released from memory unsent is read back from disk.
        if wasNextToSend && !state.hasDisk {
            state.send = state.head
            state.sendSequence = state.headSequence
        }
    }

    // MARK: Draining

    /// Copies unsent frames out, oldest first, and advances the send cursor past them.
    ///
    /// `body` receives each frame's sequence number and its bytes in one or two parts (two when the frame wraps
    /// around the end of the storage). It runs with the ring locked: it must only copy, and must not call back into
    /// the ring. Frames are taken while their bodies add up to at most `maxBytes`, but always at least one.
    /// Returns how many frames were taken.
    @discardableResult
    public func readUnsent(
        maxBytes: Int,
        _ body: (_ sequence: UInt64, _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Void
    ) -> Int {
        state.withLock { state in
            var frames = 0
            var bytes = 0
            while state.sendSequence < state.nextSequence {
                if state.hasDisk {
                    guard readFromDiskLocked(maxBytes: maxBytes, frames: &frames, bytes: &bytes, &state, body) else { break }
                    if state.sendSequence >= state.nextSequence { break }
                }
                let (length, _) = header(at: state.send)
                if frames > 0 && bytes + length > maxBytes { break }
                let bodyStart = advance(state.send, by: Self.frameHeaderBytes)
                let firstLength = min(length, capacity - bodyStart)
                body(
                    state.sendSequence,
                    UnsafeRawBufferPointer(start: storage + bodyStart, count: firstLength),
                    UnsafeRawBufferPointer(start: storage, count: length - firstLength)
                )
                state.send = advance(bodyStart, by: length)
                state.sendSequence += 1
                bytes += length
                frames += 1
                if state.sendSequence % SendMarks.stride == 0 {
                    state.sendMarks.note(sequence: state.sendSequence, offset: state.send)
                }
            }
            if frames > 0 && state.sendSequence >= state.headSequence {
                state.sendMarks.note(sequence: state.sendSequence, offset: state.send)
            }
            return frames
        }
    }

    /// Up to `maxBytes` leading bytes of the oldest unacknowledged frame: the oldest in memory or, when the ring moved
    /// older ones to the persistent buffer's disk, the oldest of those. Nil when the ring holds none.
    public func oldestFramePrefix(maxBytes: Int) -> [UInt8]? {
        state.withLock { oldestFramePrefixLocked(&$0, maxBytes: maxBytes) }
    }

    private func oldestFramePrefixLocked(_ state: inout State, maxBytes: Int) -> [UInt8]? {
        if let prefix = oldestDiskFramePrefixLocked(maxBytes: maxBytes, &state) { return prefix }
        guard state.headSequence < state.nextSequence, state.used > 0 else { return nil }
        let (length, _) = header(at: state.head)
        let count = min(length, maxBytes)
        var prefix = [UInt8](repeating: 0, count: count)
        let bodyStart = advance(state.head, by: Self.frameHeaderBytes)
        prefix.withUnsafeMutableBytes { destination in
            guard let base = destination.baseAddress, count > 0 else { return }
            let first = min(count, capacity - bodyStart)
            base.copyMemory(from: storage + bodyStart, byteCount: first)
            if first < count { (base + first).copyMemory(from: storage, byteCount: count - first) }
        }
        return prefix
    }

    /// Whether the ring holds no frames at all (everything written was acknowledged or dropped).
    public var isEmpty: Bool {
        state.withLock { $0.headSequence == $0.nextSequence && !($0.disk?.hasData(above: $0.acknowledged) ?? false) }
    }

    /// Whether frames are waiting to be sent.
    public var hasUnsentFrames: Bool {
        state.withLock { $0.sendSequence < $0.nextSequence }
    }

    /// Asks to be told once when an unsent frame exists.
    ///
    /// Returns `false` without storing `handler` when unsent frames exist already (read them now). Otherwise stores
    /// it and returns `true`; the next append calls it once, outside the lock, and forgets it. A later call replaces
    /// an earlier handler that has not fired.
    public func notifyWhenDataAvailable(_ handler: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            if state.sendSequence < state.nextSequence { return false }
            state.dataWaiter = handler
            return true
        }
    }

    /// How many appends are waiting for room now (queued, not yet granted it).
    var waitingForSpace: Int {
        state.withLock { $0.spaceWaiters.count }
    }

    /// Forgets a handler stored by `notifyWhenDataAvailable`.
    public func cancelDataNotification() {
        state.withLock { $0.dataWaiter = nil }
    }

    // MARK: Acknowledgement and resume

    /// Releases every frame up to and including `sequence`; the collector has stored them.
    /// Moves the send cursor forward if it pointed into the released frames.
    public func acknowledge(through sequence: UInt64) {
        let (spaceWaiters, acknowledged) = state.withLock { state in
            if sequence > state.acknowledged { state.acknowledged = sequence }
            let (oldHead, oldUsed) = (state.head, state.used)
            releaseToSendMarkLocked(through: sequence, &state)
            while state.headSequence <= sequence && state.headSequence < state.nextSequence {
                let (length, _) = header(at: state.head)
                releaseHeadLocked(&state, frameBytes: Self.frameHeaderBytes + length)
            }
            state.memory.release(from: oldHead, released: oldUsed - state.used, tail: state.tail, used: state.used, in: storage)
            if state.hasDisk {
                let acknowledged = state.acknowledged
                state.disk!.release(through: acknowledged)
                if state.sendSequence <= sequence { moveSendCursorLocked(to: sequence &+ 1, &state) }
            }
            return (grantSpaceLocked(&state), state.acknowledged)
        }
        for waiter in spaceWaiters { waiter.continuation.resume(returning: true) }
        acknowledgements.advance(to: acknowledged)
    }

    /// Starts a new connection at the collector's resume point: releases everything up to `collectorHas` and
    /// rewinds the send cursor to the oldest retained frame. If the collector already holds sequences this ring
    /// has not assigned yet (only possible if an epoch was reused), numbering continues above them so new
    /// frames are not discarded as duplicates.
    /// Returns the sequence number that will be sent first.
    @discardableResult
    public func resume(collectorHas: UInt64) -> UInt64 {
        acknowledge(through: collectorHas)
        return state.withLock { state in
            if collectorHas >= state.nextSequence {
                // Saturating: a (confused) collector must not be able to crash the agent.
                state.nextSequence = collectorHas == .max ? .max : collectorHas + 1
                state.headSequence = state.nextSequence
                state.sendMarks.removeAll()
                state.spilledThrough = state.nextSequence - 1
                let next = state.nextSequence
                state.disk?.noteAssigned(next: next)
            }
            if state.hasDisk {
                moveSendCursorLocked(to: collectorHas &+ 1, &state)
                return state.sendSequence
            }
            state.send = state.head
            state.sendSequence = state.headSequence
            return state.sendSequence
        }
    }

    /// Rewinds the send cursor to the oldest retained frame, so everything not yet acknowledged is sent again.
    public func rewindToAcknowledged() {
        state.withLock { state in
            if state.hasDisk { return moveSendCursorLocked(to: state.acknowledged &+ 1, &state) }
            state.send = state.head
            state.sendSequence = state.headSequence
        }
    }

    // MARK: Observing acknowledgements

    /// The highest sequence the collector has acknowledged; 0 before the first acknowledgement.
    public var acknowledgedSequence: UInt64 {
        state.withLock { $0.acknowledged }
    }

    /// Waits until the collector has acknowledged a sequence above `sequence` and returns the acknowledged
    /// sequence. Returns at once when that is already so; cancellation ends the wait and returns the current value.
    public func waitForAcknowledgement(after sequence: UInt64) async -> UInt64 {
        // No sequence is above the maximum: a wait after it ends once the maximum itself is acknowledged.
        await acknowledgements.wait(until: sequence == .max ? .max : sequence + 1)
    }

    // MARK: Observation

    /// A consistent snapshot of the cursors and counters; with `oldestPrefixBytes` > 0 it also holds that many
    /// leading bytes of the oldest unacknowledged frame (`oldestFramePrefix`), read under the same lock, so that
    /// `retainedFrames > 0` always comes with a frame.
    public func statistics(oldestPrefixBytes: Int = 0) -> RingStatistics {
        state.withLock { state in
            RingStatistics(
                capacity: capacity,
                usedBytes: state.used,
                retainedFrames: Int(state.nextSequence - state.headSequence),
                unsentFrames: Int(state.nextSequence - state.sendSequence),
                acknowledged: state.acknowledged,
                oldestRetained: state.headSequence,
                nextToSend: state.sendSequence,
                nextToWrite: state.nextSequence,
                oldestFramePrefix: oldestPrefixBytes > 0 ? oldestFramePrefixLocked(&state, maxBytes: oldestPrefixBytes) : nil,
                sources: state.sources.map {
                    RingStatistics.SourceCounts(
                        name: $0.name, appended: $0.appended, droppedOldest: $0.droppedOldest,
                        droppedNewest: $0.droppedNewest, rejectedOversize: $0.rejectedOversize
                    )
                }
            )
        }
    }

    /// Bytes of the ring's storage in memory now, as the kernel reports them; nil where it cannot tell. At most
    /// `capacity` rounded up to whole pages; small while the collector keeps up (see `RingMemory`).
    public func residentBytes() -> Int? {
        state.withLock { $0.memory.residentBytes(of: storage) }
    }

    /// Gives the memory of every free region back to the system now, however fast the ring has been (see
    /// `RingMemory`): for a ring that went quiet after a burst, which would otherwise hold its pages until its next
    /// slow lap, and before shutting down. Frames are untouched.
    public func releaseFreeMemory() {
        state.withLock { $0.memory.releaseAllFree(tail: $0.tail, used: $0.used, in: storage) }
    }

    // MARK: Waiting for space

    /// Queues for `needed` bytes (at the back, or at the head when `ahead`: a granted frame that lost its room) and
    /// returns once they are granted (true: set aside in `reservedForWaiters` for this append) or the task is
    /// cancelled (false).
    private nonisolated(nonsending) func waitForSpace(_ needed: Int, ahead: Bool) async -> Bool {
        let id = WaiterID.next()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let (cancelled, granted) = state.withLock { state -> (Bool, [SpaceWaiter]) in
                    if Task.isCancelled { return (true, []) }
                    let waiter = SpaceWaiter(id: id, needed: needed, continuation: continuation)
                    if ahead { state.spaceWaiters.prepend(waiter) } else { state.spaceWaiters.append(waiter) }
                    return (false, grantSpaceLocked(&state))
                }
                if cancelled { continuation.resume(returning: false) }
                for waiter in granted { waiter.continuation.resume(returning: true) }
            }
        } onCancel: {
            let (cancelled, granted) = state.withLock { state -> (SpaceWaiter?, [SpaceWaiter]) in
                guard let index = state.spaceWaiters.firstIndex(where: { $0.id == id }) else { return (nil, []) }
                let cancelled = state.spaceWaiters.remove(at: index)
                // It may have been the head that nothing behind it could pass.
                return (cancelled, grantSpaceLocked(&state))
            }
            cancelled?.continuation.resume(returning: false)
            for waiter in granted { waiter.continuation.resume(returning: true) }
        }
    }

    /// Takes waiting appends from the head of the queue, in order, while the next one's frame fits beside the room
    /// already set aside, and sets its room aside (`reservedForWaiters`). The head is never passed, so a large frame
    /// is not kept out by small ones behind it. The caller resumes them outside the lock.
    private func grantSpaceLocked(_ state: inout State) -> [SpaceWaiter] {
        var granted: [SpaceWaiter] = []
        while let head = state.spaceWaiters.first, state.used + state.reservedForWaiters + head.needed <= capacity {
            state.spaceWaiters.removeFirst()
            state.reservedForWaiters += head.needed
            granted.append(head)
        }
        return granted
    }

    // MARK: Storage access (callers hold the lock)

    @inline(__always)
    func advance(_ offset: Int, by bytes: Int) -> Int {
        let next = offset + bytes
        return next >= capacity ? next - capacity : next
    }

    private func copyIn(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        let first = min(bytes.count, capacity - offset)
        (storage + offset).copyMemory(from: base, byteCount: first)
        if first < bytes.count {
            storage.copyMemory(from: base + first, byteCount: bytes.count - first)
        }
    }

    func header(at offset: Int) -> (length: Int, source: UInt32) {
        if offset + Self.frameHeaderBytes <= capacity {
            let length = UInt32(littleEndian: storage.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            let source = UInt32(littleEndian: storage.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
            return (Int(length), source)
        }
        var header: (UInt32, UInt32) = (0, 0)
        withUnsafeMutableBytes(of: &header) { destination in
            let first = min(Self.frameHeaderBytes, capacity - offset)
            destination.baseAddress!.copyMemory(from: storage + offset, byteCount: first)
            if first < Self.frameHeaderBytes {
                (destination.baseAddress! + first).copyMemory(from: storage, byteCount: Self.frameHeaderBytes - first)
            }
        }
        return (Int(UInt32(littleEndian: header.0)), UInt32(littleEndian: header.1))
    }
}

extension RecordRing {
    struct State {
        var memory: RingMemory
        /// The disk side, with `buffer.persist`.
        var disk: (any RecordRingDisk)? {
            didSet { hasDisk = disk != nil }
        }
        /// Whether `disk` is there: asked for every frame appended and read, where testing the existential itself
        /// goes through its type's value witnesses.
        private(set) var hasDisk = false
        /// Frames up to this sequence are on disk, or are kept frames that need not be (with a disk only).
        var spilledThrough: UInt64 = 0
        /// The disk side's counters once it was closed.
        var closedDiskStatistics: PersistentBufferStatistics?
        var head = 0
        var tail = 0
        var send = 0
        var used = 0
        var headSequence: UInt64 = 1
        var sendSequence: UInt64 = 1
        var nextSequence: UInt64 = 1
        var acknowledged: UInt64 = 0
        var sources: [SourceCounters] = []
        var dataWaiter: (@Sendable () -> Void)?
        /// Appends waiting for room, in the order they queued.
        var spaceWaiters: Deque<SpaceWaiter> = []
        /// Room set aside for waiting appends that were granted it and have not taken it yet.
        var reservedForWaiters = 0
        var sendMarks = SendMarks()
    }

    /// Where the send cursor stood after each pass that read frames from memory, and at every `stride`-th frame it
    /// read from memory: a frame's sequence and the offset where it starts (or will start, when no frame has that
    /// sequence yet). Acknowledgements release frames through these marks instead of reading every released frame's
    /// header, which by then has usually left the CPU's caches: a collector acknowledges where its batches end, not
    /// where the agent's passes did, and walking the headers of half a pass on every acknowledgement was about a
    /// twentieth of the agent's CPU in a bulk transfer.
    ///
    /// A mark stays true while its sequence lies between the oldest retained frame and the next to write: frames never
    /// move in the storage, and the only renumbering (`resume` above everything written) clears the marks.
    struct SendMarks {
        /// At most this many marks are remembered (32 KiB). When more are noted, every other one is forgotten, so
        /// the marks thin out evenly over what is unacknowledged instead of leaving its oldest part (the part the
        /// next acknowledgements release) without any: a collector's pipeline can hold more than the 16 MiB of
        /// 250-byte frames this many marks cover at `stride`, and then each acknowledgement read every header from
        /// the oldest frame on.
        static let limit = 2048
        /// A mark is kept at every frame whose sequence is a multiple of this, so an acknowledgement reads at most
        /// this many headers.
        static let stride: UInt64 = 32
        private var marks: Deque<(sequence: UInt64, offset: Int)> = []

        /// Remembers that frame `sequence` starts at `offset`. A mark at or above it (from before a rewind) goes.
        mutating func note(sequence: UInt64, offset: Int) {
            while let last = marks.last, last.sequence >= sequence { marks.removeLast() }
            if marks.count == Self.limit {
                var kept: Deque<(sequence: UInt64, offset: Int)> = []
                kept.reserveCapacity(Self.limit)
                for (index, mark) in marks.enumerated() where index % 2 == 1 { kept.append(mark) }
                marks = kept
            }
            marks.append((sequence, offset))
        }

        /// The newest mark whose preceding frames are all acknowledged through `acknowledged` and that lies above
        /// the oldest retained frame, if any; forgets it and every older mark.
        mutating func take(
            acknowledgedThrough acknowledged: UInt64, headSequence: UInt64, nextSequence: UInt64
        ) -> (sequence: UInt64, offset: Int)? {
            var taken: (sequence: UInt64, offset: Int)?
            while let first = marks.first, first.sequence <= acknowledged &+ 1 || first.sequence <= headSequence {
                marks.removeFirst()
                if first.sequence > headSequence && first.sequence <= nextSequence { taken = first }
            }
            return taken
        }

        mutating func removeAll() { marks.removeAll() }
    }

    struct SourceCounters {
        let name: String
        var appended = 0
        var droppedOldest = 0
        var droppedNewest = 0
        var rejectedOversize = 0
    }

    struct SpaceWaiter {
        let id: UInt64
        let needed: Int
        /// Resumed with whether the room was granted (false: the task was cancelled).
        let continuation: CheckedContinuation<Bool, Never>
    }

    fileprivate enum WaiterID {
        private static let counter = Atomic<UInt64>(0)
        static func next() -> UInt64 { counter.add(1, ordering: .relaxed).newValue }
    }
}

/// A snapshot of a ring's cursors and per-source counters.
public struct RingStatistics: Sendable, Equatable {
    public struct SourceCounts: Sendable, Equatable {
        public var name: String
        /// Frames stored.
        public var appended: Int
        /// Frames evicted unacknowledged to make room (`drop_oldest`).
        public var droppedOldest: Int
        /// Frames refused because the ring was full (`drop_newest`, or a cancelled wait).
        public var droppedNewest: Int
        /// Frames refused because they were larger than the whole ring.
        public var rejectedOversize: Int
    }

    public var capacity: Int
    public var usedBytes: Int
    public var retainedFrames: Int
    public var unsentFrames: Int
    /// Highest sequence acknowledged by the collector (0: none).
    public var acknowledged: UInt64
    /// Sequence of the oldest frame still stored (equals `nextToWrite` when empty).
    public var oldestRetained: UInt64
    public var nextToSend: UInt64
    public var nextToWrite: UInt64
    /// The leading bytes of the oldest unacknowledged frame (in memory, or on the persistent buffer's disk when the
    /// ring moved it there), when `statistics(oldestPrefixBytes:)` asked for them and the ring holds a frame.
    public var oldestFramePrefix: [UInt8]?
    public var sources: [SourceCounts]

    /// Counters of the named source, if registered.
    public func source(_ name: String) -> SourceCounts? { sources.first { $0.name == name } }
}
