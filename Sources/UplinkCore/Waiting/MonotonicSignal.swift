import Synchronization

/// A counter that only grows, and tasks waiting for it to reach a value.
///
/// What "the collector acknowledged through sequence N", "the log has records up to N" and "a forwarder's cursor
/// moved" are: the side that makes progress calls `advance(to:)` or `bump()`, the side that waits for it calls
/// `wait(until:)`, with no timer and no polling.
///
/// The reading and raising side is `@inlinable`: a caller in another module (the ring's acknowledgements, the
/// collector log's committed end, each touched per stored batch) gets it specialized for its `Value`, instead of the
/// generic code that looks up its metadata on every call.
public final class MonotonicSignal<Value: FixedWidthInteger & Sendable>: Sendable {
    @usableFromInline
    struct Waiter: Sendable {
        let id: UInt64
        @usableFromInline let threshold: Value
        @usableFromInline let continuation: CheckedContinuation<Value, Never>
    }
    @usableFromInline
    struct State: Sendable {
        @usableFromInline var value: Value
        var nextID: UInt64 = 0
        @usableFromInline var waiters: [Waiter] = []
        init(value: Value) { self.value = value }
    }
    @usableFromInline let state: Mutex<State>

    /// A signal at `value`.
    public init(_ value: Value = 0) {
        state = Mutex(State(value: value))
    }

    /// The current value.
    @inlinable
    public var value: Value { state.withLock { $0.value } }

    /// Raises the value to `newValue` (a smaller one is ignored) and returns every wait it satisfies.
    @inlinable
    public func advance(to newValue: Value) {
        raise { max($0, newValue) }
    }

    /// Adds one (saturating at the maximum) and returns every wait that satisfies.
    @inlinable
    public func bump() {
        raise { $0 == .max ? $0 : $0 + 1 }
    }

    @inlinable
    func raise(_ next: (Value) -> Value) {
        let (ready, value) = state.withLock { state -> ([Waiter], Value) in
            let value = next(state.value)
            guard value > state.value else { return ([], state.value) }
            state.value = value
            guard !state.waiters.isEmpty else { return ([], value) }
            var ready: [Waiter] = []
            state.waiters.removeAll { waiter in
                guard waiter.threshold <= value else { return false }
                ready.append(waiter)
                return true
            }
            return (ready, value)
        }
        for waiter in ready { waiter.continuation.resume(returning: value) }
    }

    /// Returns the value once it is at least `threshold`, or the current value at once when the calling task is (or
    /// gets) cancelled.
    @discardableResult
    public func wait(until threshold: Value) async -> Value {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
                let now = state.withLock { state -> Value? in
                    if state.value >= threshold || Task.isCancelled { return state.value }
                    state.waiters.append(Waiter(id: id, threshold: threshold, continuation: continuation))
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let (waiter, value) = state.withLock { state -> (Waiter?, Value) in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return (nil, state.value) }
                return (state.waiters.remove(at: index), state.value)
            }
            waiter?.continuation.resume(returning: value)
        }
    }

    /// Like `wait(until:)`, but returns at `deadline` on `clock` at the latest; cancellation of the calling task ends
    /// it too. Returns the value then.
    @discardableResult
    public func wait<C: Clock>(until threshold: Value, deadline: C.Instant, clock: C) async -> Value {
        let current = value
        guard current < threshold else { return current }
        return await withTaskGroup(of: Value?.self) { group in
            group.addTask { await self.wait(until: threshold) }
            group.addTask {
                try? await clock.sleep(until: deadline, tolerance: nil)
                return nil
            }
            _ = await group.next()
            group.cancelAll()
            return self.value
        }
    }
}
