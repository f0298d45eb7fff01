import NIOCore
import Synchronization

/// One connection's stream, as the registry sees it: whether it has been told to stop, and when it has let go of
/// its agent.
final class StreamControl: Sendable {
    let channel: any Channel
    private struct State {
        var stopRequested = false
        var stopHandler: (@Sendable () -> Void)?
        var released = false
        var releaseWaiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    init(channel: any Channel) {
        self.channel = channel
    }

    var isStopRequested: Bool { state.withLock { $0.stopRequested } }

    /// Asks the stream to end after its current batch; with `closingConnection` also closes its connection at
    /// once (a replaced connection is presumed dead, and a writer blocked on it would never see the request).
    func requestStop(closingConnection: Bool) {
        let handler = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.stopRequested else { return nil }
            state.stopRequested = true
            return state.stopHandler
        }
        handler?()
        if closingConnection { channel.close(promise: nil) }
    }

    /// Calls `handler` when a stop is requested (at once if it already was).
    func onStop(_ handler: @escaping @Sendable () -> Void) {
        let alreadyStopped = state.withLock { state in
            state.stopHandler = handler
            return state.stopRequested
        }
        if alreadyStopped { handler() }
    }

    /// The stream no longer touches its agent's mark.
    func markReleased() {
        let waiters = state.withLock { state in
            state.released = true
            defer { state.releaseWaiters = [] }
            return state.releaseWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once `markReleased()` was called. Deliberately not cancellable: a successor must never run while
    /// this stream may still store a batch.
    func waitUntilReleased() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let released = state.withLock { state in
                if state.released { return true }
                state.releaseWaiters.append(continuation)
                return false
            }
            if released { continuation.resume() }
        }
    }
}

/// Which connection owns each agent. A new connection of an agent takes over from the older one, which is told to
/// stop; the new one starts only after the old one let go, so one agent's batches never interleave.
final class AgentRegistry: Sendable {
    private struct State {
        var owners: [String: StreamControl] = [:]
        var shuttingDown = false
    }
    private let state = Mutex(State())

    /// Makes `control` the owner of `agent`; returns the previous owner, which the caller must stop and wait for.
    /// During shutdown `control` is told to stop at once.
    func claim(agent: String, control: StreamControl) -> StreamControl? {
        let (previous, shuttingDown) = state.withLock { state in
            let previous = state.owners.updateValue(control, forKey: agent)
            return (previous, state.shuttingDown)
        }
        if shuttingDown { control.requestStop(closingConnection: false) }
        return previous
    }

    /// Forgets `control` as the owner of `agent`, unless a newer connection took over already.
    func release(agent: String, control: StreamControl) {
        state.withLock { state in
            if state.owners[agent] === control { state.owners[agent] = nil }
        }
    }

    var isShuttingDown: Bool { state.withLock { $0.shuttingDown } }

    /// Graceful shutdown: every stream ends after its current batch, with its response ended cleanly.
    func stopAll() {
        let owners = state.withLock { state in
            state.shuttingDown = true
            return Array(state.owners.values)
        }
        for control in owners { control.requestStop(closingConnection: false) }
    }
}
