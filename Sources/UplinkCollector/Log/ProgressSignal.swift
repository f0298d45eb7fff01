import Synchronization

/// A counter that only grows, and tasks waiting for it to reach a value: how forwarders learn that the log has new
/// records and retention that a cursor moved or a segment closed, without looking on a timer.
final class ProgressSignal: Sendable {
    private struct Waiter {
        let id: UInt64
        let threshold: Int64
        let continuation: CheckedContinuation<Void, Never>
    }
    private struct State {
        var value: Int64
        var nextID: UInt64 = 0
        var waiters: [Waiter] = []
    }
    private let state: Mutex<State>

    init(_ value: Int64 = 0) {
        state = Mutex(State(value: value))
    }

    /// The current value.
    var value: Int64 { state.withLock { $0.value } }

    /// Raises the value to `newValue` (a smaller one is ignored) and resumes every waiter it satisfies.
    func advance(to newValue: Int64) {
        raise { max($0, newValue) }
    }

    /// Adds one (a change happened) and wakes whoever waits for it.
    func bump() {
        raise { $0 + 1 }
    }

    private func raise(_ next: (Int64) -> Int64) {
        let ready = state.withLock { state -> [Waiter] in
            let value = next(state.value)
            guard value > state.value else { return [] }
            state.value = value
            guard !state.waiters.isEmpty else { return [] }
            var ready: [Waiter] = []
            state.waiters.removeAll { waiter in
                guard waiter.threshold <= value else { return false }
                ready.append(waiter)
                return true
            }
            return ready
        }
        for waiter in ready { waiter.continuation.resume() }
    }

    /// Returns once the value is at least `threshold`, or at once when the task is (or gets) cancelled.
    func wait(until threshold: Int64) async {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.value >= threshold || Task.isCancelled { return true }
                    state.waiters.append(Waiter(id: id, threshold: threshold, continuation: continuation))
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume()
        }
    }

    /// Like `wait(until:)`, but returns at `deadline` at the latest.
    func wait(until threshold: Int64, deadline: ContinuousClock.Instant) async {
        guard value < threshold else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.wait(until: threshold) }
            group.addTask { try? await Task.sleep(until: deadline, clock: .continuous) }
            await group.next()
            group.cancelAll()
        }
    }
}
