import NIOCore
import Synchronization
import UplinkCore

/// One connection's stream, as the registry sees it: whether it has been told to stop, and when it has let go of
/// its agent.
final class StreamControl: Sendable {
    let channel: any Channel
    /// How the stream is connected and who its certificate says it is (for `Collector.openStreams()`).
    let description: OpenStream
    private struct State {
        var stopRequested = false
        var stopHandler: (@Sendable () -> Void)?
    }
    private let state = Mutex(State())
    private let released = AsyncLatch<Void>()

    init(channel: any Channel, description: OpenStream) {
        self.channel = channel
        self.description = description
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
        released.open(with: ())
    }

    /// Returns once `markReleased()` was called. Deliberately not cancellable: a successor must never run while
    /// this stream may still store a batch.
    func waitUntilReleased() async {
        await released.wait()
    }
}

/// Which connection owns each agent. A new connection of an agent takes over from the older one, which is told to
/// stop; the new one starts only after the old one let go, so one agent's batches never interleave.
final class AgentRegistry: Sendable {
    private struct State {
        var owners: [String: StreamControl] = [:]
        var shuttingDown = false
        var slotsTaken = 0
    }
    private let state = Mutex(State())

    /// Takes one of `limit` stream slots for `agent`, or returns nil when all are taken. An agent that owns a
    /// stream already may go over the limit: its new stream replaces the old one, which gives its slot back soon.
    func takeSlot(agent: String, limit: Int) -> StreamSlot? {
        let taken = state.withLock { state in
            guard state.slotsTaken < limit || state.owners[agent] != nil else { return false }
            state.slotsTaken += 1
            return true
        }
        return taken ? StreamSlot(registry: self) : nil
    }

    fileprivate func releaseSlot() {
        state.withLock { $0.slotsTaken -= 1 }
    }

    /// The streams that own their agent now.
    func openStreams() -> [OpenStream] {
        state.withLock { $0.owners.values.map(\.description) }.sorted { $0.agent < $1.agent }
    }

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

/// One taken stream slot, given back by `release()` or, should the response that holds it never run, when it is
/// dropped.
final class StreamSlot: Sendable {
    private let registry: AgentRegistry
    private let released = Atomic(false)

    fileprivate init(registry: AgentRegistry) {
        self.registry = registry
    }

    deinit { release() }

    func release() {
        if !released.exchange(true, ordering: .relaxed) { registry.releaseSlot() }
    }
}

/// A stream the collector serves now, as `Collector.openStreams()` lists it.
public struct OpenStream: Sendable, Equatable {
    /// The agent id (`Uplink-Agent`).
    public var agent: String
    /// The stream epoch (`Uplink-Epoch`).
    public var epoch: UInt64
    /// `HTTP/1.1` or `HTTP/2`.
    public var httpVersion: String
    /// Whether the connection is TLS.
    public var tls: Bool
    /// The TLS version negotiated (`TLSv1.2`, `TLSv1.3`), nil without TLS.
    public var tlsVersion: String?
    /// The client certificate's subject (e.g. `CN=agent-1`) when the agent presented one, else nil.
    public var certificateSubject: String?
    /// The peer's address.
    public var peer: String

    public init(
        agent: String, epoch: UInt64, httpVersion: String, tls: Bool, tlsVersion: String?, certificateSubject: String?,
        peer: String
    ) {
        self.agent = agent
        self.epoch = epoch
        self.httpVersion = httpVersion
        self.tls = tls
        self.tlsVersion = tlsVersion
        self.certificateSubject = certificateSubject
        self.peer = peer
    }
}
