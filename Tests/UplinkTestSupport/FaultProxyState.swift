import NIOCore
import Synchronization

/// What a freshly accepted client connection is going to do.
enum ProxyConnectionMode: Sendable {
    /// Answer the request head with a canned HTTP response and close; upstream is not contacted.
    case respond(status: Int)
    /// Forward bytes to and from upstream; optionally cut after this many client->upstream bytes.
    case forward(cutAfterUpstreamBytes: Int?)
}

/// The settings a live connection consults for every chunk it forwards.
struct ProxyForwardingSettings: Sendable {
    var stalled: Bool
    var latency: TimeAmount
}

/// State shared between the public `FaultProxy` facade and the event-loop-confined connections.
///
/// Everything mutable lives behind one `Mutex`; callers never hold it across a call into NIO.
final class FaultProxyState: Sendable {
    enum Phase {
        case idle
        case starting
        case running(any Channel)
        case stopped
    }

    /// Book-keeping for one accepted client connection and its upstream partner.
    struct Entry {
        /// The connection object; only usable on its event loop.
        let connection: NIOLoopBound<ProxyConnection>
        /// Completed once every channel of this connection is closed and no connect is in flight.
        let finished: EventLoopPromise<Void>
        /// Number of channels (client, upstream) that are open.
        var openChannels: Int
        /// True while the connect to upstream is in flight.
        var connectPending: Bool

        var isFinished: Bool { openChannels == 0 && !connectPending }
    }

    struct State {
        var phase: Phase = .idle
        var port: Int = 0
        var settings = ProxyForwardingSettings(stalled: false, latency: .zero)
        var statusResponse: (status: Int, remaining: Int)?
        var cutAfterUpstreamBytes: Int?
        var acceptInstants: [ContinuousClock.Instant] = []
        var bytesToUpstream: Int = 0
        var bytesToClient: Int = 0
        var nextConnectionID: Int = 0
        var connections: [Int: Entry] = [:]
        /// Every HTTP/1.1 request head clients sent, in the order the proxy read them.
        var requestHeads: [String] = []
        /// Alterations waiting for a request head that contains their marker, first come first served.
        var responseAlterations: [(marker: String, alteration: ProxyResponseAlteration)] = []
        /// A connection on which a request head with this arrives is closed before the request goes upstream.
        var refusedRequestMarker: String?
        /// Whether clients' bytes are kept, per connection id (`clientBytes`).
        var recordsClientBytes = false
        var clientBytes: [Int: [UInt8]] = [:]
    }

    let state = Mutex(State())

    // MARK: Settings read on the hot path

    var forwardingSettings: ProxyForwardingSettings {
        self.state.withLock { $0.settings }
    }

    func addForwarded(toUpstream count: Int) {
        self.state.withLock { $0.bytesToUpstream += count }
    }

    func addForwarded(toClient count: Int) {
        self.state.withLock { $0.bytesToClient += count }
    }

    /// Records a request head a client sent, and says what to do with it: refuse it (close the connection before it
    /// goes upstream), or forward it with the alteration it arms for its response, if any. A canned response
    /// (`forwarded` false) is neither refused nor altered, and leaves the alteration for the next request.
    func recordRequestHead(_ head: String, forwarded: Bool) -> (refuse: Bool, alteration: ProxyResponseAlteration?) {
        self.state.withLock { state in
            state.requestHeads.append(head)
            guard forwarded else { return (false, nil) }
            if let marker = state.refusedRequestMarker, head.contains(marker) { return (true, nil) }
            guard let index = state.responseAlterations.firstIndex(where: { head.contains($0.marker) }) else { return (false, nil) }
            return (false, state.responseAlterations.remove(at: index).alteration)
        }
    }

    /// Keeps `buffer`'s bytes as sent by the client of connection `id`, when that is asked for.
    func recordClientBytes(_ buffer: ByteBuffer, connection id: Int) {
        self.state.withLock { state in
            guard state.recordsClientBytes else { return }
            state.clientBytes[id, default: []].append(contentsOf: buffer.readableBytesView)
        }
    }

    // MARK: Connection registry

    /// Registers a newly accepted connection. Returns `nil` if the proxy is not running.
    func register(
        connection: NIOLoopBound<ProxyConnection>,
        acceptedAt instant: ContinuousClock.Instant
    ) -> (id: Int, mode: ProxyConnectionMode)? {
        let finished = connection.eventLoop.makePromise(of: Void.self)
        let result: (id: Int, mode: ProxyConnectionMode)? = self.state.withLock { state in
            guard case .running = state.phase else { return nil }
            state.acceptInstants.append(instant)
            let id = state.nextConnectionID
            state.nextConnectionID += 1

            let mode: ProxyConnectionMode
            if let response = state.statusResponse, response.remaining > 0 {
                mode = .respond(status: response.status)
                state.statusResponse = response.remaining > 1 ? (response.status, response.remaining - 1) : nil
            } else {
                mode = .forward(cutAfterUpstreamBytes: state.cutAfterUpstreamBytes)
            }
            state.connections[id] = Entry(
                connection: connection,
                finished: finished,
                openChannels: 1,
                connectPending: false
            )
            return (id, mode)
        }
        if result == nil {
            finished.succeed(())
        }
        return result
    }

    func upstreamConnectStarted(id: Int) {
        self.state.withLock { $0.connections[id]?.connectPending = true }
    }

    /// Records the outcome of the upstream connect (`opened` is true if a channel was created).
    func upstreamConnectFinished(id: Int, opened: Bool) {
        self.updateEntry(id: id) { entry in
            entry.connectPending = false
            if opened { entry.openChannels += 1 }
        }
    }

    func channelClosed(id: Int) {
        self.updateEntry(id: id) { entry in
            entry.openChannels -= 1
        }
    }

    private func updateEntry(id: Int, _ body: (inout Entry) -> Void) {
        let finished: EventLoopPromise<Void>? = self.state.withLock { state in
            guard var entry = state.connections[id] else { return nil }
            body(&entry)
            if entry.isFinished {
                state.connections[id] = nil
                return entry.finished
            }
            state.connections[id] = entry
            return nil
        }
        finished?.succeed(())
    }

    /// The connections that are currently live, for applying a control to each.
    var liveConnections: [NIOLoopBound<ProxyConnection>] {
        self.state.withLock { state in state.connections.values.map(\.connection) }
    }
}
