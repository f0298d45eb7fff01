import Synchronization

/// A `Clock` whose time moves only when the test calls `advance(by:)`.
public final class ManualClock: Clock, Sendable {
    public typealias Instant = ContinuousClock.Instant

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }
    private struct State {
        var now = ContinuousClock.Instant.now
        var sleepers: [Sleeper] = []
        var nextID: UInt64 = 0
    }
    private let state = Mutex(State())

    public init() {}

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .nanoseconds(1) }
    /// Sleeps in progress.
    public var sleepers: Int { state.withLock { $0.sleepers.count } }

    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.now >= deadline { return .success(()) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the time on and ends the sleeps it reaches.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            defer { state.sleepers.removeAll { $0.deadline <= now } }
            return state.sleepers.filter { $0.deadline <= now }
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// How far each sleep in progress has yet to go, shortest first.
    public var sleepsLeft: [Duration] {
        state.withLock { state in state.sleepers.map { state.now.duration(to: $0.deadline) }.sorted() }
    }

    /// Waits (`eventually`) until `count` sleeps are in progress; whether they are.
    public func waitForSleepers(_ count: Int) async -> Bool {
        await eventually { sleepers >= count }
    }

    /// Moves the time on by `step` and waits (`eventually`) until the tasks that sleep on this clock are all asleep
    /// again: `count` sleeps in progress, each with time left. A task woken by the step has then done what was due
    /// and gone back to sleep, so what it would do by this time is done (of a task that something other than the
    /// clock woke, it says nothing). Whether they settled.
    public func advance(by step: Duration, settlingTo count: Int) async -> Bool {
        advance(by: step)
        return await eventually { isSettled(count) }
    }

    /// Whether `count` sleeps are in progress and each has time left (see `advance(by:settlingTo:)`).
    public func isSettled(_ count: Int) -> Bool {
        state.withLock { state in
            state.sleepers.count == count && state.sleepers.allSatisfy { $0.deadline > state.now }
        }
    }
}
