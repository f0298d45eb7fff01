import Testing

@testable import UplinkSources

/// `SourceWakeup` keeps one timer armed across waits; these check that every wait still ends when it should: at a
/// signal, at its own timeout (also when it is shorter than the armed one), or at cancellation. The bounds are
/// generous deadlines for "it ended", not measurements of speed.
@Suite("Source wakeup")
struct SourceWakeupTests {
    /// Runs `wait` in a task; returns whether it ended within `limit` (the task is cancelled after it).
    private func ends(within limit: Duration, _ wait: @escaping @Sendable () async -> Void) async -> Bool {
        let task = Task { await wait() }
        let ended = Flag()
        Task {
            await task.value
            ended.set()
        }
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: limit)
        while !ended.isSet, clock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        task.cancel()
        return ended.isSet
    }

    @Test("a signal before the wait ends the next wait at once; a signal during it ends it")
    func signals() async {
        let wakeup = SourceWakeup()
        wakeup.signal()
        #expect(await ends(within: .seconds(20)) { await wakeup.wait(timeout: .seconds(3600)) })
        let waiting = Task { await wakeup.wait(timeout: .seconds(3600)) }
        try? await Task.sleep(for: .milliseconds(50))
        wakeup.signal()
        #expect(await ends(within: .seconds(20)) { await waiting.value })
        waiting.cancel()
    }

    @Test("a wait ends at its timeout without a signal")
    func timeout() async {
        let wakeup = SourceWakeup()
        #expect(await ends(within: .seconds(20)) { await wakeup.wait(timeout: .milliseconds(20)) })
    }

    @Test("a wait shorter than the timer armed by an earlier wait still ends at its own timeout")
    func shorterTimeoutAfterLongerOne() async {
        let wakeup = SourceWakeup()
        // Arms an hour-long timer, then ends by a signal: the timer stays armed.
        let long = Task { await wakeup.wait(timeout: .seconds(3600)) }
        try? await Task.sleep(for: .milliseconds(50))
        wakeup.signal()
        await long.value
        #expect(await ends(within: .seconds(20)) { await wakeup.wait(timeout: .milliseconds(20)) })
    }

    @Test("cancellation ends a wait")
    func cancellation() async {
        let wakeup = SourceWakeup()
        let waiting = Task { await wakeup.wait(timeout: .seconds(3600)) }
        try? await Task.sleep(for: .milliseconds(50))
        waiting.cancel()
        #expect(await ends(within: .seconds(20)) { await waiting.value })
    }
}
