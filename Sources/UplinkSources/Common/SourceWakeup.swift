import Synchronization

/// Wakes a source's reading task from its idle wait: new data, a new file, a timer (the tailer and the journald
/// source).
///
/// The wait's timeout is one timer task that stays armed across waits: a wait whose deadline is not earlier than the
/// armed one leaves it alone, and the armed timer wakes that wait early (a spurious wake-up the caller's loop absorbs:
/// it looks again and waits again). So a tailer woken a thousand times a second by new lines arms a timer about once
/// per timeout instead of once per line (a task group, a timer registered and cancelled on the dispatch manager
/// thread, and two wake-ups more, each time).
final class SourceWakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: (id: UInt64, continuation: CheckedContinuation<Void, Never>)?
        var nextID: UInt64 = 0
        /// When the armed timer fires, nil when none is armed.
        var timerDeadline: ContinuousClock.Instant?
        var timer: Task<Void, Never>?
    }
    private let state = Mutex(State())
    /// What the timeouts are measured on and the timer sleeps on.
    let clock: any TickClock

    init(clock: any TickClock) {
        self.clock = clock
    }

    deinit {
        state.withLock { $0.timer }?.cancel()
    }

    /// Ends the current wait, or the next one at once if nobody waits.
    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// Waits until `signal()`, `deadline` on the clock (or an earlier one armed by a previous wait), or cancellation.
    func wait(until deadline: ContinuousClock.Instant) async {
        if state.withLock({ state in
            defer { state.signalled = false }
            return state.signalled
        }) {
            return
        }
        armTimer(deadline: deadline)
        await waitForSignal()
    }

    /// Waits until `signal()`, `timeout` from now (or an earlier deadline armed by a previous wait), or cancellation.
    func wait(timeout: Duration) async {
        await wait(until: clock.now.advanced(by: timeout))
    }

    private func armTimer(deadline: ContinuousClock.Instant) {
        // Checked, created and recorded under one lock: a timer recorded after it fired (a preempted thread) would
        // leave a deadline in the past that no timer serves, and every later wait would rely on it.
        let replaced = state.withLock { state -> Task<Void, Never>? in
            if let armed = state.timerDeadline, armed <= deadline { return nil }
            let previous = state.timer
            state.timerDeadline = deadline
            let clock = self.clock
            state.timer = Task { [weak self] in
                try? await clock.sleep(until: deadline)
                if Task.isCancelled { return }
                self?.timerFired(deadline: deadline)
            }
            return previous
        }
        replaced?.cancel()
    }

    private func timerFired(deadline: ContinuousClock.Instant) {
        state.withLock { state in
            if state.timerDeadline == deadline {
                state.timerDeadline = nil
                state.timer = nil
            }
        }
        signal()
    }

    private func waitForSignal() async {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = (id, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let waiter = state.waiter, waiter.id == id else { return nil }
                state.waiter = nil
                return waiter.continuation
            }
            waiter?.resume()
        }
    }
}
