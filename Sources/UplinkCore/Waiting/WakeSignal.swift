import Synchronization

/// Wakes one waiting task: `signal()` ends the wait in progress, or, when nobody waits, the next wait at once (a
/// signal is never lost; several signals before a wait count as one).
///
/// What "something changed, look again" is for a task that owns a loop: a tailer woken by inotify, a storing task
/// woken by a batch handed over. One task waits at a time.
public final class WakeSignal: Sendable {
    /// The waiting task. Its continuation is resumed only by whoever takes it out of `State.waiter` under the lock,
    /// so exactly once: an unchecked continuation is enough, and saves the checked one's allocation and atomics on
    /// every wait (a tailer waits once per write at ordinary rates). A struct, not a tuple: a tuple in an optional
    /// went through the runtime's generic tuple witnesses on each signal.
    private struct Waiter {
        let id: UInt64
        let continuation: UnsafeContinuation<Void, Never>
    }
    private struct State {
        var signalled = false
        var waiter: Waiter?
        var nextID: UInt64 = 0
    }
    private let state = Mutex(State())

    public init() {}

    /// Ends the current wait, or the next one at once if nobody waits.
    public func signal() {
        let waiter = state.withLock { state -> UnsafeContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// Whether a task is waiting now.
    public var hasWaiter: Bool { state.withLock { $0.waiter != nil } }

    /// Takes a signal given since the last wait without waiting; whether there was one.
    public func consume() -> Bool {
        state.withLock { state in
            defer { state.signalled = false }
            return state.signalled
        }
    }

    /// Returns at a signal (one given before the call counts) or when the calling task is (or gets) cancelled.
    public func wait() async {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    precondition(state.waiter == nil, "WakeSignal: one task waits at a time")
                    state.waiter = Waiter(id: id, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> UnsafeContinuation<Void, Never>? in
                guard let waiter = state.waiter, waiter.id == id else { return nil }
                state.waiter = nil
                return waiter.continuation
            }
            waiter?.resume()
        }
    }
}
