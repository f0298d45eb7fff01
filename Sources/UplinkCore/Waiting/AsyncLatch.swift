import Synchronization

/// A one-shot event with a value: `open(with:)` sets it once, and every wait, before or after, returns it.
///
/// What "this stream let go of its agent", "the source has returned" and "the collector is listening (or failed to)"
/// are. A latch never closes again; the first `open` wins.
public final class AsyncLatch<Value: Sendable>: Sendable {
    private enum Waiter {
        /// `wait()`: resumed only by `open`.
        case uncancellable(CheckedContinuation<Value, Never>)
        /// `waitUnlessCancelled()`: resumed by `open` or by its task's cancellation.
        case cancellable(id: UInt64, CheckedContinuation<Value, any Error>)

        func resume(returning value: Value) {
            switch self {
            case .uncancellable(let continuation): continuation.resume(returning: value)
            case .cancellable(_, let continuation): continuation.resume(returning: value)
            }
        }
    }
    private struct State {
        var value: Value?
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }
    private let state = Mutex(State())

    public init() {}

    /// Opens the latch with `value` and returns every wait with it. Returns false (and changes nothing) when it was
    /// open already.
    @discardableResult
    public func open(with value: Value) -> Bool {
        let waiters = state.withLock { state -> [Waiter]? in
            guard state.value == nil else { return nil }
            state.value = value
            defer { state.waiters = [] }
            return state.waiters
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume(returning: value) }
        return true
    }

    /// The value, once open.
    public var value: Value? { state.withLock { $0.value } }

    /// Returns the value once the latch is open, whatever happens to the calling task meanwhile: for waits that must
    /// not end early (a successor must not start while its predecessor may still write).
    public func wait() async -> Value {
        await withCheckedContinuation { (continuation: CheckedContinuation<Value, Never>) in
            let value = state.withLock { state -> Value? in
                if let value = state.value { return value }
                state.waiters.append(.uncancellable(continuation))
                return nil
            }
            if let value { continuation.resume(returning: value) }
        }
    }

    /// Returns the value once the latch is open; throws `CancellationError` when the calling task is (or gets)
    /// cancelled first.
    public func waitUnlessCancelled() async throws -> Value {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                let outcome = state.withLock { state -> Result<Value, any Error>? in
                    if let value = state.value { return .success(value) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiters.append(.cancellable(id: id, continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Value, any Error>? in
                for (index, waiter) in state.waiters.enumerated() {
                    if case .cancellable(id, let continuation) = waiter {
                        state.waiters.remove(at: index)
                        return continuation
                    }
                }
                return nil
            }
            waiter?.resume(throwing: CancellationError())
        }
    }
}
