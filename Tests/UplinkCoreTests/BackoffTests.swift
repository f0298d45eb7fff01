import Testing
import UplinkCore
import UplinkTestSupport

@Suite("Backoff")
struct BackoffTests {
    @Test func defaults() {
        let backoff = Backoff()
        #expect(backoff.initial == .milliseconds(250))
        #expect(backoff.multiplier == 2)
        #expect(backoff.maximum == .seconds(30))
        #expect(backoff.resetAfter == .seconds(30))
    }

    @Test func ceilingsDoubleFrom250MillisecondsUpTo30Seconds() {
        let backoff = Backoff()
        let expected: [Duration] = [
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(16),
            .seconds(30), .seconds(30), .seconds(30),
        ]
        #expect((0..<expected.count).map { backoff.ceiling(attempt: $0) } == expected)
        for attempt in [10, 11, 62, 63, 64, 100, 1000, 4096, 4097, 1 << 20, Int.max / 2, Int.max - 1, Int.max] {
            #expect(backoff.ceiling(attempt: attempt) == .seconds(30), "attempt \(attempt)")
        }
    }

    @Test func negativeAttemptsUseTheInitialCeiling() {
        let backoff = Backoff()
        #expect(backoff.ceiling(attempt: -1) == .milliseconds(250))
        #expect(backoff.ceiling(attempt: .min) == .milliseconds(250))
    }

    @Test func ceilingsAreMonotonicAndCapped() {
        for (initial, multiplier, maximum) in [
            (Duration.milliseconds(100), 3.0, Duration.seconds(60)),
            (.milliseconds(1), 1.5, .milliseconds(1)),
            (.seconds(1), 10, .seconds(3600)),
            (.nanoseconds(1), 2, .seconds(1)),
        ] {
            let backoff = Backoff(initial: initial, multiplier: multiplier, maximum: maximum)
            var previous = Duration.zero
            for attempt in 0..<200 {
                let ceiling = backoff.ceiling(attempt: attempt)
                #expect(ceiling >= previous)
                #expect(ceiling <= maximum)
                #expect(ceiling >= initial)
                previous = ceiling
            }
            #expect(previous == maximum)
        }
    }

    @Test func ceilingFollowsTheFormula() {
        let backoff = Backoff(initial: .milliseconds(100), multiplier: 3, maximum: .seconds(60))
        // 100 ms × 3ⁿ: 0.1, 0.3, 0.9, 2.7, 8.1, 24.3, 72.9 → 60.
        let expectedMilliseconds: [Int64] = [100, 300, 900, 2700, 8100, 24300, 60000, 60000]
        for (attempt, milliseconds) in expectedMilliseconds.enumerated() {
            let nanoseconds = backoff.ceiling(attempt: attempt).nanoseconds
            #expect(abs(nanoseconds - milliseconds * 1_000_000) <= 1, "attempt \(attempt): \(nanoseconds) ns")
        }
    }

    @Test func multiplierOneStaysAtTheInitialCeilingAndTerminates() {
        let backoff = Backoff(initial: .seconds(1), multiplier: 1, maximum: .seconds(30))
        for attempt in [0, 1, 100, 4096, 1 << 40, Int.max / 2, Int.max] {
            #expect(backoff.ceiling(attempt: attempt) == .seconds(1))
        }
        var random = SplitMix64(seed: 1)
        #expect(backoff.delay(attempt: .max, using: &random) <= .seconds(1))
    }

    @Test func multipliersCloseToOneReachTheCapForHugeAttempts() {
        let backoff = Backoff(initial: .seconds(1), multiplier: 1.0001, maximum: .seconds(30))
        // 1.0001ⁿ passes 30 at n ≈ 34,000: the formula caps any larger attempt.
        #expect(backoff.ceiling(attempt: 1_000_000) == .seconds(30))
        #expect(backoff.ceiling(attempt: Int.max / 2) == .seconds(30))
        #expect(backoff.ceiling(attempt: Int.max) == .seconds(30))
        let ten = backoff.ceiling(attempt: 10).seconds
        #expect(abs(ten - 1.0010004501) < 1e-9)
    }

    @Test func aHugeMaximumDoesNotOverflow() {
        let backoff = Backoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(Int64.max / 2))
        #expect(backoff.ceiling(attempt: 10) == .seconds(1024))
        #expect(backoff.ceiling(attempt: 1000).nanoseconds == .max)
        var random = SplitMix64(seed: 3)
        #expect(backoff.delay(attempt: 1000, using: &random) >= .zero)
    }

    @Test func anInfiniteMultiplierJumpsToTheCap() {
        let backoff = Backoff(initial: .seconds(1), multiplier: .infinity, maximum: .seconds(30))
        #expect(backoff.ceiling(attempt: 0) == .seconds(1))
        #expect(backoff.ceiling(attempt: 1) == .seconds(30))
        #expect(backoff.ceiling(attempt: .max) == .seconds(30))
    }

    @Test func zeroInitialGivesZeroDelays() {
        let backoff = Backoff(initial: .zero, multiplier: 2, maximum: .seconds(30))
        var random = SplitMix64(seed: 7)
        for attempt in [0, 1, 10, 4096, .max] {
            #expect(backoff.ceiling(attempt: attempt) == .zero)
            #expect(backoff.delay(attempt: attempt, using: &random) == .zero)
        }
    }

    @Test(.computeBound, arguments: [0, 1, 2, 0xDEAD_BEEF, .max] as [UInt64])
    func delaysLieWithinZeroAndTheCeiling(seed: UInt64) {
        let backoff = Backoff()
        var random = SplitMix64(seed: seed)
        for attempt in 0..<12 {
            let ceiling = backoff.ceiling(attempt: attempt)
            var smallest = ceiling
            var largest = Duration.zero
            for _ in 0..<2000 {
                let delay = backoff.delay(attempt: attempt, using: &random)
                #expect(delay >= .zero && delay <= ceiling)
                smallest = min(smallest, delay)
                largest = max(largest, delay)
            }
            // Full jitter: draws spread over the whole window (deterministic for a fixed seed).
            #expect(smallest < ceiling / 20, "attempt \(attempt)")
            #expect(largest > ceiling * 19 / 20, "attempt \(attempt)")
        }
    }

    @Test func theSameSeedGivesTheSameDelays() {
        let backoff = Backoff()
        func delays(seed: UInt64) -> [Duration] {
            var random = SplitMix64(seed: seed)
            return (0..<50).map { backoff.delay(attempt: $0 % 10, using: &random) }
        }
        #expect(delays(seed: 99) == delays(seed: 99))
        #expect(delays(seed: 99) != delays(seed: 100))
    }

    @Test func delayIsAUniformDrawFromTheCeilingInNanoseconds() {
        let backoff = Backoff()
        var random = SplitMix64(seed: 5)
        var reference = SplitMix64(seed: 5)
        for attempt in 0..<10 {
            let ceiling = backoff.ceiling(attempt: attempt).nanoseconds
            #expect(backoff.delay(attempt: attempt, using: &random) == .nanoseconds(Int64.random(in: 0...ceiling, using: &reference)))
        }
    }

    // MARK: SplitMix64

    @Test func splitMix64MatchesTheReferenceSequence() {
        // Reference values of SplitMix64 (Steele, Lea, Flood 2014) for seed 0 and seed 1234567.
        var zero = SplitMix64(seed: 0)
        #expect(zero.next() == 0xE220_A839_7B1D_CDAF)
        #expect(zero.next() == 0x6E78_9E6A_A1B9_65F4)
        #expect(zero.next() == 0x06C4_5D18_8009_454F)
        var other = SplitMix64(seed: 1_234_567)
        #expect(other.next() == 6_457_827_717_110_365_317)
        #expect(other.next() == 3_203_168_211_198_807_973)
    }

    @Test func splitMix64IsACopyableValue() {
        var first = SplitMix64(seed: 11)
        _ = first.next()
        var copy = first
        #expect(first.next() == copy.next())
        #expect(first.next() == copy.next())
    }

    // MARK: Duration helpers

    @Test func durationNanoseconds() {
        #expect(Duration.zero.nanoseconds == 0)
        #expect(Duration.nanoseconds(1).nanoseconds == 1)
        #expect(Duration.nanoseconds(-1).nanoseconds == -1)
        #expect(Duration.seconds(1).nanoseconds == 1_000_000_000)
        #expect(Duration.milliseconds(1500).nanoseconds == 1_500_000_000)
        #expect(Duration.milliseconds(-1500).nanoseconds == -1_500_000_000)
        #expect(Duration.seconds(30).nanoseconds == 30_000_000_000)
        #expect(Duration.nanoseconds(Int64.max).nanoseconds == .max)
        #expect(Duration.nanoseconds(Int64.min).nanoseconds == .min)
        // Sub-nanosecond parts are truncated.
        #expect(Duration(secondsComponent: 2, attosecondsComponent: 999_999_999).nanoseconds == 2_000_000_000)
        #expect(Duration(secondsComponent: 2, attosecondsComponent: 1_999_999_999).nanoseconds == 2_000_000_001)
    }

    @Test func durationNanosecondsSaturates() {
        #expect(Duration.seconds(Int64.max).nanoseconds == .max)
        #expect(Duration.seconds(Int64.min).nanoseconds == .min)
        #expect(Duration.seconds(9_223_372_037).nanoseconds == .max)
        #expect(Duration.seconds(-9_223_372_037).nanoseconds == .min)
        // Overflow only when the fraction is added.
        #expect((Duration.seconds(9_223_372_036) + .milliseconds(900)).nanoseconds == .max)
        #expect((Duration.seconds(-9_223_372_036) - .milliseconds(900)).nanoseconds == .min)
        #expect((Duration.seconds(9_223_372_036) + .nanoseconds(854_775_807)).nanoseconds == .max)
        #expect((Duration.seconds(-9_223_372_036) - .nanoseconds(854_775_808)).nanoseconds == .min)
    }

    @Test func durationSeconds() {
        #expect(Duration.zero.seconds == 0)
        #expect(Duration.milliseconds(250).seconds == 0.25)
        #expect(Duration.seconds(30).seconds == 30)
        #expect(Duration.milliseconds(-1500).seconds == -1.5)
        #expect(Duration.nanoseconds(1).seconds == 1e-9)
        #expect(Duration.seconds(Int64.max).seconds == Double(Int64.max))
    }
}
