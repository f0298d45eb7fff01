import Testing

@testable import UplinkSources

@Suite("interval ticker")
struct TickerTests {
    /// 2024-11-18 10:02:03.25 UTC.
    static let start: Int64 = 1_731_924_123_250_000_000
    static let second: Int64 = 1_000_000_000

    private func ticks(_ ticker: inout IntervalTicker, _ count: Int) async throws -> [Int64] {
        var result: [Int64] = []
        for _ in 0..<count {
            result.append(try await ticker.nextTick())
        }
        return result
    }

    @Test("ticks land on multiples of the interval and do not drift with work time")
    func aligned() async throws {
        // Every tick's work takes 37 ms; targets must still be exact multiples.
        let clock = FakeTickClock(now: Self.start, workNanoseconds: 37_000_000, maximumSleeps: 100)
        var ticker = IntervalTicker(interval: .seconds(10), clock: clock)
        let result = try await ticks(&ticker, 50)
        let first: Int64 = 1_731_924_130 * Self.second
        #expect(result == (0..<50).map { first + Int64($0) * 10 * Self.second })
        #expect(ticker.skippedTicks == 0)
    }

    @Test("sub-second and odd intervals align to multiples since the epoch", arguments: [
        (Duration.milliseconds(250), Int64(1_731_924_123_250_000_000)),
        (.seconds(1), 1_731_924_124_000_000_000),
        (.seconds(7), 1_731_924_124_000_000_000),  // 7 × 247_417_732
        (.seconds(60), 1_731_924_180_000_000_000),
    ])
    func otherIntervals(interval: Duration, expectedFirst: Int64) async throws {
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 10)
        var ticker = IntervalTicker(interval: interval, clock: clock)
        let first = try await ticker.nextTick()
        #expect(first % ticker.intervalNanoseconds == 0)
        #expect(first >= Self.start && first - Self.start < ticker.intervalNanoseconds)
        #expect(first == expectedFirst)
        let second = try await ticker.nextTick()
        #expect(second - first == ticker.intervalNanoseconds)
    }

    @Test("a start exactly on a boundary ticks at once")
    func onBoundary() async throws {
        let clock = FakeTickClock(now: 1_731_924_120 * Self.second, maximumSleeps: 10)
        var ticker = IntervalTicker(interval: .seconds(10), clock: clock)
        #expect(try await ticker.nextTick() == 1_731_924_120 * Self.second)
    }

    @Test("missed ticks are skipped, not fired in a burst")
    func skipsMissedTicks() async throws {
        // After the second tick the work (or a suspend) takes 25 s.
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 100) { number, clock in
            if number == 3 { clock.set(now: 1_731_924_140 * Self.second + 25 * Self.second) }
        }
        var ticker = IntervalTicker(interval: .seconds(10), clock: clock)
        let result = try await ticks(&ticker, 5)
        // Sleep #3 asked for :150 but the clock moved to :165 while it slept, so tick 3 is reported as :150
        // (its scheduled time) and the next one re-aligns to :170, skipping :160.
        #expect(result.map { $0 / Self.second - 1_731_924_000 } == [130, 140, 150, 170, 180])
        #expect(ticker.skippedTicks == 1)
    }

    @Test("a backward wall-clock step re-aligns instead of waiting for the old schedule")
    func backwardStep() async throws {
        let clock = FakeTickClock(now: Self.start, maximumSleeps: 100) { number, clock in
            // Right after tick 3 (:150) the clock is stepped back by one hour (to :152 an hour earlier).
            if number == 3 { clock.set(now: 1_731_924_152 * Self.second - 3600 * Self.second) }
        }
        var ticker = IntervalTicker(interval: .seconds(10), clock: clock)
        let result = try await ticks(&ticker, 5)
        let base: Int64 = 1_731_924_000
        #expect(result.map { $0 / Self.second - base } == [130, 140, 150, 160 - 3600, 170 - 3600])
    }

    @Test("scheduling math")
    func scheduling() {
        #expect(IntervalTicker.alignedAtOrAfter(15, interval: 10) == 20)
        #expect(IntervalTicker.alignedAtOrAfter(20, interval: 10) == 20)
        #expect(IntervalTicker.alignedAtOrAfter(0, interval: 10) == 0)
        #expect(IntervalTicker.alignedAtOrAfter(-5, interval: 10) == 0)
        #expect(IntervalTicker.alignedAtOrAfter(-15, interval: 10) == -10)
        #expect(IntervalTicker.clampedNanoseconds(.zero) == IntervalTicker.minimumIntervalNanoseconds)
        #expect(IntervalTicker.clampedNanoseconds(.seconds(-3)) == IntervalTicker.minimumIntervalNanoseconds)
        #expect(IntervalTicker.clampedNanoseconds(.seconds(Int64.max)) == IntervalTicker.maximumIntervalNanoseconds)
        #expect(IntervalTicker.clampedNanoseconds(.milliseconds(1500)) == 1_500_000_000)
    }

    @Test("the system clock sleeps until a wall-clock instant")
    func systemClock() async throws {
        let clock = SystemTickClock()
        let target = clock.nowNanoseconds() + 20_000_000
        try await clock.sleep(untilNanoseconds: target)
        #expect(clock.nowNanoseconds() >= target)
        try await clock.sleep(untilNanoseconds: target - 1_000_000_000)  // in the past: returns at once
    }
}
