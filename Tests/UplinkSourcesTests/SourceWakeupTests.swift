import Testing

@testable import UplinkSources

/// `SourceWakeup` keeps one timer armed across waits; these check that every wait still ends when it should: at a
/// signal, at its own timeout (also when it is shorter than the armed one), or at cancellation. A wait that never
/// ends fails the test at the suite's time limit; nothing here measures speed.
@Suite("Source wakeup", .timeLimit(.minutes(2)))
struct SourceWakeupTests {
    @Test("a signal before the wait ends the next wait at once; a signal during it ends it")
    func signals() async {
        let wakeup = SourceWakeup()
        wakeup.signal()
        await wakeup.wait(timeout: .seconds(3600))
        let waiting = Task { await wakeup.wait(timeout: .seconds(3600)) }
        try? await Task.sleep(for: .milliseconds(50))
        wakeup.signal()
        await waiting.value
    }

    @Test("a wait ends at its timeout without a signal")
    func timeout() async {
        let wakeup = SourceWakeup()
        await wakeup.wait(timeout: .milliseconds(20))
    }

    @Test("a wait shorter than the timer armed by an earlier wait still ends at its own timeout")
    func shorterTimeoutAfterLongerOne() async {
        let wakeup = SourceWakeup()
        // Arms an hour-long timer, then ends by a signal: the timer stays armed.
        let long = Task { await wakeup.wait(timeout: .seconds(3600)) }
        try? await Task.sleep(for: .milliseconds(50))
        wakeup.signal()
        await long.value
        await wakeup.wait(timeout: .milliseconds(20))
    }

    @Test("cancellation ends a wait")
    func cancellation() async {
        let wakeup = SourceWakeup()
        let waiting = Task { await wakeup.wait(timeout: .seconds(3600)) }
        try? await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        await waiting.value
    }
}
