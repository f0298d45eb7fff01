import Synchronization
import Testing
import UplinkCore
import UplinkTestSupport

/// The three waiting primitives. What a wait returns proves when it ended (a latch's value, a signal's value at the
/// time), so no test needs to sleep to show that something did not happen yet; deadlines run on `ManualClock`.
@Suite("Waiting primitives", .timeLimit(.minutes(2)))
struct WaitingTests {
    // MARK: AsyncLatch

    @Test("a latch returns its value to waits before and after it opens; the first open wins")
    func latchOpensOnce() async throws {
        let latch = AsyncLatch<Int>()
        #expect(latch.value == nil)
        let early = Task { await latch.wait() }
        let earlyCancellable = Task { try await latch.waitUnlessCancelled() }
        #expect(latch.open(with: 7))
        #expect(!latch.open(with: 8), "a second open changes nothing")
        #expect(await early.value == 7)
        #expect(try await earlyCancellable.value == 7)
        #expect(await latch.wait() == 7)
        #expect(latch.value == 7)
    }

    @Test("wait() outlasts the cancellation of its task: it can only return the value")
    func latchWaitIgnoresCancellation() async {
        let latch = AsyncLatch<Int>()
        let waiting = Task { await latch.wait() }
        waiting.cancel()
        latch.open(with: 42)
        #expect(await waiting.value == 42)
    }

    @Test("waitUnlessCancelled() throws when its task is cancelled first, before or during the wait")
    func latchCancellableWait() async throws {
        let latch = AsyncLatch<Int>()
        let during = Task { try await latch.waitUnlessCancelled() }
        during.cancel()
        await #expect(throws: CancellationError.self) { try await during.value }
        let before = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await latch.waitUnlessCancelled()
        }
        await #expect(throws: CancellationError.self) { try await before.value }
        latch.open(with: 1)
        let after = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await latch.waitUnlessCancelled()
        }
        #expect(try await after.value == 1, "an open latch answers even a cancelled task")
    }

    // MARK: MonotonicSignal

    @Test("a monotonic signal wakes each wait when its threshold is reached, not before")
    func monotonicThresholds() async {
        let signal = MonotonicSignal<UInt64>(2)
        #expect(await signal.wait(until: 2) == 2, "already there: at once")
        let five = Task { await signal.wait(until: 5) }
        let ten = Task { await signal.wait(until: 10) }
        signal.advance(to: 5)
        // Woken at 5 it would return 5: its value shows it waited for 10.
        #expect(await five.value == 5)
        signal.advance(to: 3)
        #expect(signal.value == 5, "a smaller value is ignored")
        signal.advance(to: 12)
        #expect(await ten.value == 12)
        signal.bump()
        #expect(signal.value == 13)
        let top = MonotonicSignal<UInt8>(.max)
        top.bump()
        #expect(top.value == .max, "bump saturates")
    }

    @Test("cancellation ends a monotonic wait with the current value")
    func monotonicCancellation() async {
        let signal = MonotonicSignal<Int64>(1)
        let waiting = Task { await signal.wait(until: 100) }
        waiting.cancel()
        #expect(await waiting.value == 1)
    }

    @Test("a deadline wait ends at the deadline on its clock with the value then, or earlier at the threshold")
    func monotonicDeadline() async {
        let clock = ManualClock()
        let signal = MonotonicSignal<Int64>()
        let timedOut = Task { await signal.wait(until: 10, deadline: clock.now.advanced(by: .seconds(1)), clock: clock) }
        #expect(await clock.waitForSleepers(1))
        signal.advance(to: 3)
        clock.advance(by: .milliseconds(999))
        #expect(clock.sleepers == 1, "the deadline is not there yet")
        clock.advance(by: .milliseconds(1))
        #expect(await timedOut.value == 3)

        let reached = Task { await signal.wait(until: 10, deadline: clock.now.advanced(by: .seconds(1)), clock: clock) }
        #expect(await clock.waitForSleepers(1))
        signal.advance(to: 10)
        #expect(await reached.value == 10)
        #expect(clock.sleepers == 0, "the timer was cancelled with the wait")
    }

    // MARK: WakeSignal

    @Test("a signal given before the wait ends it at once, and several count as one")
    func wakeBeforeWait() async {
        let wake = WakeSignal()
        wake.signal()
        wake.signal()
        await wake.wait()
        #expect(!wake.consume(), "both signals were taken by the one wait")
        wake.signal()
        #expect(wake.consume())
        #expect(!wake.consume())
    }

    @Test("a signal during the wait ends it")
    func wakeDuringWait() async {
        let wake = WakeSignal()
        let waiting = Task { await wake.wait() }
        #expect(await eventually { wake.hasWaiter })
        wake.signal()
        await waiting.value
        #expect(!wake.hasWaiter)
        #expect(!wake.consume(), "the signal went to the waiter, none is left over")
    }

    @Test("cancellation ends a wake wait")
    func wakeCancellation() async {
        let wake = WakeSignal()
        let waiting = Task { await wake.wait() }
        #expect(await eventually { wake.hasWaiter })
        waiting.cancel()
        await waiting.value
        #expect(!wake.hasWaiter)
    }
}
