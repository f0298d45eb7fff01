import UplinkCore

/// The clock a sensor ticks by: the wall-clock time and a way to sleep until a wall-clock instant.
///
/// Sensors take it as a parameter so tests can inject a fake that advances instantly; the agent uses
/// `SystemTickClock`.
public protocol TickClock: Sendable {
    /// Wall-clock time now, in nanoseconds since the Unix epoch (UTC). Also used for record timestamps.
    func nowNanoseconds() -> Int64

    /// Suspends until the wall clock reads `deadline` (nanoseconds since the Unix epoch), or returns at once
    /// when that instant has passed.
    /// - Throws: `CancellationError` when the calling task is cancelled.
    func sleep(untilNanoseconds deadline: Int64) async throws
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
}
