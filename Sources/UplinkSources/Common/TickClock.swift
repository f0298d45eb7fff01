import NIOCore
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

    /// Calls `action` once when the monotonic clock reads `deadline` (soon, when that has passed), unless the returned
    /// timer is cancelled first. With `eventLoop`, a clock that can runs it there as one of the loop's timers (no task,
    /// no other thread); otherwise (and by default) a task sleeps until `deadline` and then calls it.
    func schedule(
        at deadline: ContinuousClock.Instant, on eventLoop: (any EventLoop)?, _ action: @escaping @Sendable () -> Void
    ) -> TickTimer
}

extension TickClock {
    public func schedule(
        at deadline: ContinuousClock.Instant, on eventLoop: (any EventLoop)?, _ action: @escaping @Sendable () -> Void
    ) -> TickTimer {
        TickTimer.sleeping(on: self, until: deadline, action)
    }
}

/// A timer `TickClock.schedule` armed: `cancel()` keeps its action from running, if it has not run yet.
public struct TickTimer: Sendable {
    private let cancelAction: @Sendable () -> Void

    /// A timer that `cancel` stops.
    public init(cancel: @escaping @Sendable () -> Void) {
        cancelAction = cancel
    }

    /// Keeps the action from running (no effect once it ran).
    public func cancel() {
        cancelAction()
    }

    /// A task that sleeps on `clock` until `deadline`, then calls `action`; cancelling the timer cancels the task.
    public static func sleeping(
        on clock: any TickClock, until deadline: ContinuousClock.Instant, _ action: @escaping @Sendable () -> Void
    ) -> TickTimer {
        let task = Task {
            try? await clock.sleep(until: deadline)
            if !Task.isCancelled { action() }
        }
        return TickTimer { task.cancel() }
    }
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

    /// On `eventLoop`, one of its timers, `deadline` taken as the time from now (the loop measures on
    /// `CLOCK_MONOTONIC`, this clock on `CLOCK_BOOTTIME`: only their differences agree).
    public func schedule(
        at deadline: ContinuousClock.Instant, on eventLoop: (any EventLoop)?, _ action: @escaping @Sendable () -> Void
    ) -> TickTimer {
        guard let eventLoop else { return TickTimer.sleeping(on: self, until: deadline, action) }
        let remaining = max(.zero, now.duration(to: deadline))
        let scheduled = eventLoop.scheduleTask(in: .nanoseconds(remaining.nanoseconds)) { action() }
        return TickTimer { scheduled.cancel() }
    }
}
