import NIOCore
import NIOEmbedded
import Synchronization
import Testing
import UplinkTestSupport

@testable import UplinkSources

/// `SourceWakeup` keeps one timer armed across waits; these check that every wait ends when it should, and only
/// then: at a signal, at its own deadline (also when it is earlier than the armed one), or at cancellation. The
/// wakeup runs on a clock the test advances, so a deadline passes exactly when the test says. A wait that should end
/// is awaited with `eventually` (a failure, not a hang until the time limit); one that should not is given a moment
/// to end wrongly before the test checks that it did not.
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

        /// Whether the wait ended (polled until it does, bounded).
        func ends() async -> Bool {
            await eventually { ended.isSet }
        }

        /// Whether the wait is still going after the other tasks had a moment to end it.
        func keepsWaiting() async -> Bool {
            await !eventually(timeout: .milliseconds(200)) { ended.isSet }
        }
    }

    @Test("a signal before the wait ends the next wait at once; a signal during it ends it")
    func signals() async {
        let clock = ManualTickClock()
        let wakeup = SourceWakeup(clock: clock)
        wakeup.signal()
        let signalled = Waiting(wakeup, until: clock.now.advanced(by: .seconds(3600)))
        #expect(await signalled.ends(), "the signal given before the wait ended it")
        #expect(clock.sleepsLeft.isEmpty, "at once: without arming a timer")

        let waiting = Waiting(wakeup, until: clock.now.advanced(by: .seconds(3600)))
        #expect(await eventually { clock.sleepsLeft == [.seconds(3600)] }, "the wait armed its timer")
        #expect(await waiting.keepsWaiting(), "the clock did not move and nobody signalled")
        wakeup.signal()
        #expect(await waiting.ends(), "the signal ended it")
        #expect(clock.sleepsLeft == [.seconds(3600)], "the signal, not the timer: the clock never moved")
    }

    @Test("a wait ends when the clock reaches its deadline, not before")
    func deadline() async {
        let clock = ManualTickClock()
        let wakeup = SourceWakeup(clock: clock)
        let waiting = Waiting(wakeup, until: clock.now.advanced(by: .milliseconds(20)))
        #expect(await eventually { clock.sleepsLeft == [.milliseconds(20)] })
        clock.advance(by: .milliseconds(19))
        #expect(clock.sleepsLeft == [.milliseconds(1)], "the timer still has 1 ms to go")
        #expect(await waiting.keepsWaiting(), "not before the deadline")
        clock.advance(by: .milliseconds(1))
        #expect(await waiting.ends(), "at the deadline")
        #expect(await eventually { clock.sleepsLeft.isEmpty }, "the timer fired and is gone")
    }

    @Test("a wait earlier than the timer armed by an earlier wait still ends at its own deadline")
    func earlierDeadlineAfterLaterOne() async {
        let clock = ManualTickClock()
        let wakeup = SourceWakeup(clock: clock)
        // Arms an hour-long timer, then ends by a signal: the timer stays armed.
        let long = Waiting(wakeup, until: clock.now.advanced(by: .seconds(3600)))
        #expect(await eventually { clock.sleepsLeft == [.seconds(3600)] })
        wakeup.signal()
        #expect(await long.ends())
        #expect(clock.sleepsLeft == [.seconds(3600)], "the hour-long timer is still armed")
        let short = Waiting(wakeup, until: clock.now.advanced(by: .milliseconds(20)))
        #expect(await eventually { clock.sleepsLeft == [.milliseconds(20)] }, "re-armed earlier, the hour-long timer gone")
        clock.advance(by: .milliseconds(19))
        #expect(await short.keepsWaiting(), "not before its own deadline")
        clock.advance(by: .milliseconds(1))
        #expect(await short.ends(), "at its own deadline, not the hour-long one")
    }

    @Test("a later deadline leaves the armed timer alone; its firing ends the later wait early, which callers absorb")
    func laterDeadlineKeepsTheArmedTimer() async {
        let clock = ManualTickClock()
        let wakeup = SourceWakeup(clock: clock)
        let first = Waiting(wakeup, until: clock.now.advanced(by: .milliseconds(20)))
        #expect(await eventually { clock.sleepsLeft == [.milliseconds(20)] })
        wakeup.signal()
        #expect(await first.ends())
        let second = Waiting(wakeup, until: clock.now.advanced(by: .seconds(3600)))
        #expect(await second.keepsWaiting())
        #expect(clock.sleepsLeft == [.milliseconds(20)], "no second timer")
        clock.advance(by: .milliseconds(20))
        #expect(await second.ends(), "the armed timer's firing ended the later wait, an hour early")
    }

    @Test("cancellation ends a wait")
    func cancellation() async {
        let clock = ManualTickClock()
        let wakeup = SourceWakeup(clock: clock)
        let waiting = Waiting(wakeup, until: clock.now.advanced(by: .seconds(3600)))
        #expect(await eventually { clock.sleepsLeft == [.seconds(3600)] })
        #expect(await waiting.keepsWaiting())
        waiting.task.cancel()
        #expect(await waiting.ends(), "the cancellation ended it")
        #expect(clock.sleepsLeft == [.seconds(3600)], "not the timer: the clock never moved")
    }

    @Test("with an event loop, the real clock's timer is one of the loop's: the wait ends when the loop's time reaches the deadline")
    func timerOnTheEventLoop() async {
        let loop = NIOAsyncTestingEventLoop()
        let clock = SystemTickClock()
        let wakeup = SourceWakeup(clock: clock, eventLoop: loop)
        // An hour: only the loop's time, which the test moves, can reach it.
        let deadline = clock.now.advanced(by: .seconds(3600))
        let waiting = Waiting(wakeup, until: deadline)
        #expect(await eventually { wakeup.armedDeadline == deadline })
        await loop.advanceTime(by: .minutes(59))
        #expect(wakeup.armedDeadline == deadline, "not due yet: still armed")
        await loop.advanceTime(by: .minutes(1))
        #expect(wakeup.armedDeadline == nil, "fired on the loop")
        #expect(await waiting.ends())

        // A later wait with an earlier deadline replaces the timer; the replaced one never fires.
        let late = clock.now.advanced(by: .seconds(3600))
        let early = clock.now.advanced(by: .seconds(60))
        let first = Waiting(wakeup, until: late)
        #expect(await eventually { wakeup.armedDeadline == late })
        wakeup.signal()
        #expect(await first.ends())
        let second = Waiting(wakeup, until: early)
        #expect(await eventually { wakeup.armedDeadline == early })
        await loop.advanceTime(by: .minutes(1))
        #expect(await second.ends())
        #expect(wakeup.armedDeadline == nil)
        // Had the replaced timer fired, its signal would end the next wait at once.
        await loop.advanceTime(by: .minutes(60))
        let third = Waiting(wakeup, until: clock.now.advanced(by: .seconds(3600)))
        #expect(await third.keepsWaiting(), "the replaced timer was cancelled")
        wakeup.signal()
        #expect(await third.ends())
        await loop.shutdownGracefully()
    }
}
