import NIOCore
import Synchronization
import UplinkCore

/// Wakes a source's reading task from its idle wait: new data, a new file, a timer (the tailer and the journald
/// source).
///
/// The wait's timeout is one timer that stays armed across waits: a wait whose deadline is not earlier than the
/// armed one leaves it alone, and the armed timer wakes that wait early (a spurious wake-up the caller's loop absorbs:
/// it looks again and waits again). So a tailer woken a thousand times a second by new lines arms a timer about once
/// per timeout instead of once per line. With an event loop (the tailer's: the send path's loop, where it runs) the
/// timer is one of the loop's (`TickClock.schedule`); without, a task that sleeps on the clock, which costs a task
/// on the global executor, a timer on the dispatch manager thread and two wake-ups of their threads each time it is
/// armed or replaced (at a trickle of lines, several times a line).
final class SourceWakeup: Sendable {
    private struct Timer {
        /// When the armed timer fires, nil when none is armed.
        var deadline: ContinuousClock.Instant?
        var armed: TickTimer?
    }
    private let wake = WakeSignal()
    private let timer = Mutex(Timer())
    /// What the timeouts are measured on and the timer sleeps on.
    let clock: any TickClock
    /// Where the timer runs, when the clock can run it there.
    let eventLoop: (any EventLoop)?

    init(clock: any TickClock, eventLoop: (any EventLoop)? = nil) {
        self.clock = clock
        self.eventLoop = eventLoop
    }

    deinit {
        timer.withLock { $0.armed }?.cancel()
    }

    /// When the armed timer fires (tests), nil when none is armed.
    var armedDeadline: ContinuousClock.Instant? { timer.withLock { $0.deadline } }

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

    /// Makes the current (or next) wait end at `deadline` at the latest; a timer armed for earlier stays.
    func armTimer(deadline: ContinuousClock.Instant) {
        // Checked, created and recorded under one lock: a timer recorded after it fired (a preempted thread) would
        // leave a deadline in the past that no timer serves, and every later wait would rely on it.
        let replaced = timer.withLock { timer -> TickTimer? in
            if let armed = timer.deadline, armed <= deadline { return nil }
            let previous = timer.armed
            timer.deadline = deadline
            timer.armed = clock.schedule(at: deadline, on: eventLoop) { [weak self] in
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
                timer.armed = nil
            }
        }
        signal()
    }
}
