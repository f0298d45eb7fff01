import UplinkCore

/// A source's clock: the wall-clock time sensors tick by, and the monotonic time the tail and journald engines
/// measure their timeouts on, each with a way to sleep until an instant of it.
///
/// Every source takes it as a parameter (`SourceKindConfig.makeSource(name:clock:)`) so tests can inject one that
/// they advance themselves instead of sleeping; the agent uses `SystemTickClock`.
public protocol TickClock: Sendable {
    /// Wall-clock time now, in nanoseconds since the Unix epoch (UTC). Also used for record timestamps.
    func nowNanoseconds() -> Int64

    /// Suspends until the wall clock reads `deadline` (nanoseconds since the Unix epoch), or returns at once
    /// when that instant has passed.
    /// - Throws: `CancellationError` when the calling task is cancelled.
    func sleep(untilNanoseconds deadline: Int64) async throws

    /// Monotonic time now: what intervals and timeouts are measured on (it never steps with the wall clock).
    var now: ContinuousClock.Instant { get }

    /// Suspends until the monotonic clock reads `deadline`, or returns at once when that instant has passed.
    /// - Throws: `CancellationError` when the calling task is cancelled.
    func sleep(until deadline: ContinuousClock.Instant) async throws
}

/// The real clock: `CLOCK_REALTIME` for the time, `ContinuousClock` for sleeping.
///
/// `sleep(untilNanoseconds:)` converts the wall-clock deadline into a `ContinuousClock` instant when it is
/// called, so a wall-clock step during the sleep shifts at most that one tick (the ticker re-aligns after).
public struct SystemTickClock: TickClock {
    public init() {}

    public func nowNanoseconds() -> Int64 {
        WallClock.nowNanoseconds()
    }

    public func sleep(untilNanoseconds deadline: Int64) async throws {
        let clock = ContinuousClock()
        let start = clock.now
        let remaining = deadline &- WallClock.nowNanoseconds()
        guard remaining > 0 else {
            try Task.checkCancellation()
            return
        }
        try await clock.sleep(until: start.advanced(by: .nanoseconds(remaining)), tolerance: nil)
    }

    public var now: ContinuousClock.Instant { .now }

    public func sleep(until deadline: ContinuousClock.Instant) async throws {
        try await Task.sleep(until: deadline, clock: .continuous)
    }
}
