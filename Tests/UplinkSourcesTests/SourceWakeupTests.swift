import Synchronization
import Testing
import UplinkTestSupport

@testable import UplinkSources

/// `SourceWakeup` keeps one timer armed across waits; these check that every wait ends when it should, and only
/// then: at a signal, at its own deadline (also when it is earlier than the armed one), or at cancellation. The
/// wakeup runs on a clock the test advances, so a deadline passes exactly when the test says.
@Suite("Source wakeup", .timeLimit(.minutes(2)))
struct SourceWakeupTests {
    /// A wait in a task of its own, and whether it has returned.
    struct Waiting {
        let task: Task<Void, Never>
        let ended: Flag

        init(_ wakeup: SourceWakeup, until deadline: ContinuousClock.Instant) {
            let ended = Flag()
            self.ended = ended
            task = Task {
                await wakeup.wait(until: deadline)
                ended.set()
            }
        }
    }

    @Test("a signal before the wait ends the next wait at once; a signal during it ends it")
    func signals() async {
        let clock = ManualTickClock()
        let wakeup = SourceWakeup(clock: clock)
        wakeup.signal()
        await wakeup.wait(timeout: .seconds(3600))
        let waiting = Waiting(wakeup, until: clock.now.advanced(by: .seconds(3600)))
        #expect(await eventually { clock.sleepsLeft == [.seconds(3600)] }, "the wait armed its timer")
        #expect(!waiting.ended.isSet, "the clock did not move and nobody signalled")
        wakeup.signal()
        await waiting.task.value
    }

    @Test("a wait ends when the clock reaches its deadline, not before")
    func deadline() async {
        let clock = ManualTickClock()
        let wakeup = SourceWakeup(clock: clock)
        let waiting = Waiting(wakeup, until: clock.now.advanced(by: .milliseconds(20)))
        #expect(await eventually { clock.sleepsLeft == [.milliseconds(20)] })
        clock.advance(by: .milliseconds(19))
        #expect(!waiting.ended.isSet)
        clock.advance(by: .milliseconds(1))
        await waiting.task.value
        #expect(clock.sleepsLeft.isEmpty, "the timer fired and is gone")
    }

    @Test("a wait earlier than the timer armed by an earlier wait still ends at its own deadline")
    func earlierDeadlineAfterLaterOne() async {
        let clock = ManualTickClock()
        let wakeup = SourceWakeup(clock: clock)
        // Arms an hour-long timer, then ends by a signal: the timer stays armed.
        let long = Waiting(wakeup, until: clock.now.advanced(by: .seconds(3600)))
        #expect(await eventually { clock.sleepsLeft == [.seconds(3600)] })
        wakeup.signal()
        await long.task.value
        let short = Waiting(wakeup, until: clock.now.advanced(by: .milliseconds(20)))
        #expect(await eventually { clock.sleepsLeft.count == 1 && clock.sleepsLeft == [.milliseconds(20)] }, "re-armed earlier")
        clock.advance(by: .milliseconds(20))
        await short.task.value
    }

    @Test("a later deadline leaves the armed timer alone; its firing ends the later wait early, which callers absorb")
    func laterDeadlineKeepsTheArmedTimer() async {
        let clock = ManualTickClock()
        let wakeup = SourceWakeup(clock: clock)
        let first = Waiting(wakeup, until: clock.now.advanced(by: .milliseconds(20)))
        #expect(await eventually { clock.sleepsLeft == [.milliseconds(20)] })
        wakeup.signal()
        await first.task.value
        let second = Waiting(wakeup, until: clock.now.advanced(by: .seconds(3600)))
        #expect(await eventually { clock.sleepsLeft == [.milliseconds(20)] }, "no second timer")
        clock.advance(by: .milliseconds(20))
        await second.task.value
    }

    @Test("cancellation ends a wait")
    func cancellation() async {
        let clock = ManualTickClock()
        let wakeup = SourceWakeup(clock: clock)
        let waiting = Waiting(wakeup, until: clock.now.advanced(by: .seconds(3600)))
        #expect(await eventually { clock.sleepsLeft == [.seconds(3600)] })
        waiting.task.cancel()
        await waiting.task.value
        #expect(waiting.ended.isSet)
    }
}
