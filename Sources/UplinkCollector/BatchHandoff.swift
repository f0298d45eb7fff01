import Synchronization
import UplinkCore

/// Between one stream's reading side and its storing side: batches received while the previous one is being
/// stored wait here, merged into one, so reading and storing overlap and slow storage turns many small commits
/// into fewer large ones. Bounded: `put` waits while more than `limitBytes` of lines are waiting.
///
/// At a trickle the reader stores a batch itself when nothing waits and the storer is idle (`claimIdle`), which
/// saves waking the storer for every chunk; the stream's batches are still stored one at a time, in order.
///
/// One reader calls `put`, `claimIdle`, `storedByCaller` and `finish`; one storer calls `take`. Cancellation ends
/// either wait.
final class BatchHandoff: Sendable {
    private struct State {
        var waiting: ReceivedBatch?
        var waitingBytes = 0
        var finished = false
        /// A batch is being stored, by the storer (taken) or by the reader (claimed).
        var storing = false
    }

    let limitBytes: Int
    private let state = Mutex(State())
    /// The storer waits on this for a batch (or the end).
    private let batchWaiting = WakeSignal()
    /// The reader waits on this for room below `limitBytes`.
    private let roomFreed = WakeSignal()

    init(limitBytes: Int) {
        self.limitBytes = limitBytes
    }

    /// Hands over `batch` (merged into what is waiting); returns once no more than `limitBytes` wait.
    func put(_ batch: ReceivedBatch) async {
        state.withLock { state in
            if state.waiting == nil {
                state.waiting = batch
            } else {
                state.waiting?.merge(batch)
            }
            state.waitingBytes += batch.lines.byteCount
        }
        batchWaiting.signal()
        while state.withLock({ $0.waitingBytes > limitBytes }), !Task.isCancelled {
            await roomFreed.wait()
        }
    }

    /// When nothing waits and nothing is being stored, the caller (the reader) may store its batch itself: true, and
    /// the storer takes nothing until the caller says `storedByCaller()`. False: hand the batch over with `put`.
    func claimIdle() -> Bool {
        state.withLock { state in
            guard state.waiting == nil, !state.storing else { return false }
            state.storing = true
            return true
        }
    }

    /// The batch the caller claimed with `claimIdle()` is stored (or failed).
    func storedByCaller() {
        state.withLock { $0.storing = false }
    }

    /// No more batches will come.
    func finish() {
        state.withLock { $0.finished = true }
        batchWaiting.signal()
    }

    /// Everything waiting, merged, once there is something; nil once finished with nothing waiting, or cancelled.
    /// The storer's previous batch counts as stored from this call on.
    func take() async -> ReceivedBatch? {
        state.withLock { $0.storing = false }
        while true {
            let (batch, finished) = state.withLock { state -> (ReceivedBatch?, Bool) in
                guard let waiting = state.waiting else { return (nil, state.finished) }
                (state.waiting, state.waitingBytes) = (nil, 0)
                state.storing = true
                return (waiting, false)
            }
            if let batch {
                roomFreed.signal()
                return batch
            }
            if finished || Task.isCancelled { return nil }
            await batchWaiting.wait()
        }
    }
}

extension ReceivedBatch {
    /// Appends a later batch of the same stream.
    mutating func merge(_ later: ReceivedBatch) {
        lines.append(contentsOf: later.lines)
        highestSequence = max(highestSequence, later.highestSequence)
        raisesMark = raisesMark || later.raisesMark
        origins.merge(later.origins) { max($0, $1) }
        duplicates += later.duplicates
        resent += later.resent
        heartbeats += later.heartbeats
        gaps.append(contentsOf: later.gaps)
        rejects.append(contentsOf: later.rejects.prefix(max(0, Self.maximumRejectNotes - rejects.count)))
        tooLong += later.tooLong
        malformed += later.malformed
    }
}
