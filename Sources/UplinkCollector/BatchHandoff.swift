import Synchronization

/// Between one stream's reading side and its storing side: batches received while the previous one is being
/// stored wait here, merged into one, so reading and storing overlap and slow storage turns many small commits
/// into fewer large ones. Bounded: `put` waits while more than `limitBytes` of lines are waiting.
///
/// One reader calls `put` and `finish`; one storer calls `take`. Cancellation ends either wait.
final class BatchHandoff: Sendable {
    private struct State {
        var waiting: ReceivedBatch?
        var waitingBytes = 0
        var finished = false
        var taker: CheckedContinuation<ReceivedBatch?, Never>?
        var giver: CheckedContinuation<Void, Never>?
    }

    let limitBytes: Int
    private let state = Mutex(State())

    init(limitBytes: Int) {
        self.limitBytes = limitBytes
    }

    /// Hands over `batch` (merged into what is waiting); returns once no more than `limitBytes` wait.
    func put(_ batch: ReceivedBatch) async {
        let handedOver = state.withLock { state -> (CheckedContinuation<ReceivedBatch?, Never>, ReceivedBatch)? in
            var waiting = batch
            if let earlier = state.waiting {
                waiting = earlier
                waiting.merge(batch)
            }
            guard let taker = state.taker else {
                state.waiting = waiting
                state.waitingBytes += batch.lines.byteCount
                return nil
            }
            (state.taker, state.waiting, state.waitingBytes) = (nil, nil, 0)
            return (taker, waiting)
        }
        if let (taker, waiting) = handedOver {
            taker.resume(returning: waiting)
            return
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let full = state.withLock { state in
                    guard state.waitingBytes > limitBytes, !Task.isCancelled else { return false }
                    state.giver = continuation
                    return true
                }
                if !full { continuation.resume() }
            }
        } onCancel: {
            state.withLock { state in
                defer { state.giver = nil }
                return state.giver
            }?.resume()
        }
    }

    /// No more batches will come.
    func finish() {
        let taker = state.withLock { state -> CheckedContinuation<ReceivedBatch?, Never>? in
            state.finished = true
            defer { state.taker = nil }
            return state.taker
        }
        taker?.resume(returning: nil)
    }

    /// Everything waiting, merged, once there is something; nil once finished with nothing waiting, or cancelled.
    func take() async -> ReceivedBatch? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<ReceivedBatch?, Never>) in
                let (now, giver) = state.withLock { state -> (ReceivedBatch??, CheckedContinuation<Void, Never>?) in
                    if let waiting = state.waiting {
                        (state.waiting, state.waitingBytes) = (nil, 0)
                        defer { state.giver = nil }
                        return (.some(waiting), state.giver)
                    }
                    if state.finished || Task.isCancelled { return (.some(nil), nil) }
                    state.taker = continuation
                    return (nil, nil)
                }
                giver?.resume()
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { state in
                defer { state.taker = nil }
                return state.taker
            }?.resume(returning: nil)
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
