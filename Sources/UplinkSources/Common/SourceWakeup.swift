import Synchronization
import UplinkCore

/// Wakes a source's reading task from its idle wait: new data, a new file, a timer (the tailer and the journald
/// source).
///
/// The wait's timeout is one timer task that stays armed across waits: a wait whose deadline is not earlier than the
/// armed one leaves it alone, and the armed timer wakes that wait early (a spurious wake-up the caller's loop absorbs:
/// it looks again and waits again). So a tailer woken a thousand times a second by new lines arms a timer about once
/// per timeout instead of once per line (a task group, a timer registered and cancelled on the dispatch manager
/// thread, and two wake-ups more, each time).
final class SourceWakeup: Sendable {
    private struct Timer {
        /// When the armed timer fires, nil when none is armed.
        var deadline: ContinuousClock.Instant?
        var task: Task<Void, Never>?
    }
    private let wake = WakeSignal()
    private let timer = Mutex(Timer())
    /// What the timeouts are measured on and the timer sleeps on.
    let clock: any TickClock

    init(clock: any TickClock) {
        self.clock = clock
    }

    deinit {
        timer.withLock { $0.task }?.cancel()
    }

    /// Ends the current wait, or the next one at once if nobody waits.
    func signal() {
        wake.signal()
    }

    /// Waits until `signal()`, `deadline` on the clock (or an earlier one armed by a previous wait), or cancellation.
    nonisolated(nonsending) func wait(until deadline: ContinuousClock.Instant) async {
        if wake.consume() { return }
        armTimer(deadline: deadline)
        await wake.wait()
    }

    /// Waits until `signal()`, `timeout` from now (or an earlier deadline armed by a previous wait), or cancellation.
    func wait(timeout: Duration) async {
        await wait(until: clock.now.advanced(by: timeout))
    }

    private func armTimer(deadline: ContinuousClock.Instant) {
        // Checked, created and recorded under one lock: a timer recorded after it fired (a preempted thread) would
        // leave a deadline in the past that no timer serves, and every later wait would rely on it.
        let replaced = timer.withLock { timer -> Task<Void, Never>? in
            if let armed = timer.deadline, armed <= deadline { return nil }
            let previous = timer.task
            timer.deadline = deadline
            let clock = self.clock
            timer.task = Task { [weak self] in
                try? await clock.sleep(until: deadline)
                if Task.isCancelled { return }
                self?.timerFired(deadline: deadline)
            }
            return previous
        }
        replaced?.cancel()
    }

    private func timerFired(deadline: ContinuousClock.Instant) {
        timer.withLock { timer in
            if timer.deadline == deadline {
                timer.deadline = nil
                timer.task = nil
            }
        }
        signal()
    }
}
