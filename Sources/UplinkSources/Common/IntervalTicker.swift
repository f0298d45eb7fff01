/// Produces ticks aligned to multiples of an interval on the wall clock (a 10 s interval ticks at :00, :10,
/// :20, … of every minute), without drift.
///
/// Each target is computed from the previous target (`previous + interval`), never from "now + interval", so
/// the time spent reading and emitting does not accumulate. Two situations re-align the schedule to the next
/// multiple of the interval at or after now instead of following it:
/// - the next target has already passed (the work took longer than an interval, the machine was suspended,
///   or the wall clock stepped forward): the missed ticks are skipped (counted in `skippedTicks`), not
///   fired in a burst;
/// - the next target lies more than one interval ahead (the wall clock stepped backward).
struct IntervalTicker: Sendable {
    /// Shortest interval the ticker accepts; shorter (or non-positive) intervals are raised to it.
    static let minimumIntervalNanoseconds: Int64 = 1_000_000
    /// Longest interval the ticker accepts (366 days); longer intervals are lowered to it.
    static let maximumIntervalNanoseconds: Int64 = 366 * 86_400 * 1_000_000_000

    /// The tick period in nanoseconds (after clamping).
    let intervalNanoseconds: Int64
    /// Largest random delay added after each aligned tick, in nanoseconds (0: none). Always below the interval.
    let jitterNanoseconds: Int64
    let clock: any TickClock

    /// Wall-clock time of the last tick returned by `nextTick()`, nanoseconds since the Unix epoch.
    private(set) var lastTick: Int64?
    /// Number of scheduled ticks skipped because they had already passed.
    private(set) var skippedTicks: Int = 0

    /// - Parameters:
    ///   - interval: The tick period.
    ///   - jitter: Each tick fires a random delay in `[0, jitter)` after its aligned instant, so many agents (or
    ///     sources) do not read at the same instant. The schedule itself stays aligned: the delay never
    ///     accumulates. Clamped to less than the interval; zero (the default) means no delay.
    ///   - clock: The clock to sleep on.
    init(interval: Duration, jitter: Duration = .zero, clock: any TickClock) {
        self.intervalNanoseconds = Self.clampedNanoseconds(interval)
        let (seconds, attoseconds) = jitter.components
        let jitterNanoseconds: Int64
        if seconds < 0 {
            jitterNanoseconds = 0
        } else if seconds >= Self.maximumIntervalNanoseconds / 1_000_000_000 {
            jitterNanoseconds = Self.maximumIntervalNanoseconds
        } else {
            jitterNanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        }
        self.jitterNanoseconds = max(0, min(jitterNanoseconds, intervalNanoseconds - 1))
        self.clock = clock
    }

    /// Sleeps until the next tick and returns its scheduled wall-clock time (nanoseconds since the epoch).
    /// - Throws: `CancellationError` when the task is cancelled while sleeping.
    mutating func nextTick() async throws -> Int64 {
        let target = scheduleNext(now: clock.nowNanoseconds())
        let delay = jitterNanoseconds > 0 ? Int64.random(in: 0..<jitterNanoseconds) : 0
        try await clock.sleep(untilNanoseconds: target &+ delay)
        lastTick = target
        return target
    }

    /// The next target given the current wall-clock time; updates `skippedTicks`. Pure apart from that.
    mutating func scheduleNext(now: Int64) -> Int64 {
        guard let last = lastTick else {
            return Self.alignedAtOrAfter(now, interval: intervalNanoseconds)
        }
        let next = last &+ intervalNanoseconds
        if next < now {
            let realigned = Self.alignedAtOrAfter(now, interval: intervalNanoseconds)
            // Ticks strictly between `last` and `realigned` were missed.
            let missed = (realigned &- last) / intervalNanoseconds &- 1
            skippedTicks &+= Int(clamping: max(0, missed))
            return realigned
        }
        if next &- now > intervalNanoseconds {
            return Self.alignedAtOrAfter(now, interval: intervalNanoseconds)
        }
        return next
    }

    /// The smallest multiple of `interval` that is `>= time` (floor-based, also right for negative times).
    static func alignedAtOrAfter(_ time: Int64, interval: Int64) -> Int64 {
        var quotient = time / interval
        if time % interval != 0, time > 0 {
            quotient += 1
        }
        return quotient &* interval
    }

    static func clampedNanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        let maximumSeconds = maximumIntervalNanoseconds / 1_000_000_000
        if seconds >= maximumSeconds { return maximumIntervalNanoseconds }
        if seconds < 0 { return minimumIntervalNanoseconds }
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        return min(max(nanoseconds, minimumIntervalNanoseconds), maximumIntervalNanoseconds)
    }
}
