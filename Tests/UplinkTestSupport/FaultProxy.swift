import NIOCore
import NIOPosix
import Synchronization

/// Errors thrown by ``FaultProxy``.
public enum FaultProxyError: Error, Sendable, Equatable {
    /// `start()` was called on a proxy that is starting, running or stopped.
    case alreadyStarted
    /// `stop()` was called while `start()` was still binding.
    case stoppedWhileStarting
}

/// A TCP fault-injection proxy for tests.
///
/// It listens on `127.0.0.1` (an ephemeral port) and relays every accepted connection to
/// `upstreamHost:upstreamPort`, forwarding bytes both ways while respecting backpressure: a side
/// is only read from while the other side is writable. Tests point a client at ``port`` and use
/// the fault controls to break the stream in realistic ways (RST, FIN, stall, latency, canned
/// HTTP error responses, cut after N bytes), and the observations to check what happened.
///
/// All members are thread-safe and may be called from any task while connections are live.
/// Controls that act on live connections (``resetAllConnections()``, ``cutAllConnections()``,
/// ``setStalled(_:)``) are applied on each connection's event loop shortly after the call
/// returns; settings that affect new connections apply to every connection accepted after the
/// call returns.
///
/// Counters: ``bytesToUpstream`` and ``bytesToClient`` count bytes actually forwarded by the
/// relay; bytes consumed or produced by ``respondWithStatus(_:times:)`` are not counted.
public final class FaultProxy: Sendable {
    private let upstreamHost: String
    private let upstreamPort: Int
    private let group: any EventLoopGroup
    private let shared = FaultProxyState()

    /// Creates a proxy that will relay to `upstreamHost:upstreamPort` once started.
    ///
    /// - Parameters:
    ///   - upstreamHost: Host to connect to for every accepted connection.
    ///   - upstreamPort: Port to connect to for every accepted connection.
    ///   - group: Event loops for the listener and all connections.
    public init(
        upstreamHost: String = "127.0.0.1",
        upstreamPort: Int,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.upstreamHost = upstreamHost
        self.upstreamPort = upstreamPort
        self.group = group
    }

    // MARK: Lifecycle

    /// Binds the listener to `127.0.0.1` on an ephemeral port (see ``port``).
    ///
    /// - Throws: ``FaultProxyError/alreadyStarted`` if called more than once, or the bind error.
    public func start() async throws {
        try self.shared.state.withLock { state in
            guard case .idle = state.phase else { throw FaultProxyError.alreadyStarted }
            state.phase = .starting
        }
        let shared = self.shared
        let upstreamHost = self.upstreamHost
        let upstreamPort = self.upstreamPort
        let bootstrap = ServerBootstrap(group: self.group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .childChannelOption(ChannelOptions.autoRead, value: false)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                Self.initializeAccepted(
                    channel,
                    shared: shared,
                    upstreamHost: upstreamHost,
                    upstreamPort: upstreamPort
                )
            }

        let channel: any Channel
        do {
            channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        } catch {
            self.shared.state.withLock { state in
                if case .starting = state.phase { state.phase = .idle }
            }
            throw error
        }
        let accepted = self.shared.state.withLock { state -> Bool in
            guard case .starting = state.phase else { return false }
            state.phase = .running(channel)
            state.port = channel.localAddress?.port ?? 0
            return true
        }
        if !accepted {
            try? await channel.close()
            throw FaultProxyError.stoppedWhileStarting
        }
    }

    /// The port the proxy listens on (on `127.0.0.1`); 0 before ``start()`` returned.
    public var port: Int {
        self.shared.state.withLock { $0.port }
    }

    /// Closes the listener and every connection (both sides, immediately: peers may see EOF or a
    /// reset), and waits until all of their channels are closed and no upstream connect is in
    /// flight. Afterwards ``liveConnectionCount`` is 0 and nothing of the proxy is running.
    /// Connections that were still being accepted are closed as soon as they are set up.
    /// The proxy cannot be restarted. Always call this when done; the proxy does not stop on deinit.
    public func stop() async throws {
        let (server, connections) = self.shared.state.withLock { state in
            let server: (any Channel)?
            if case .running(let channel) = state.phase { server = channel } else { server = nil }
            state.phase = .stopped
            return (server, state.connections.values.map { ($0.connection, $0.finished.futureResult) })
        }
        // A failure to close the listener (e.g. already closed) must not keep connections alive.
        try? await server?.close()
        for (connection, _) in connections {
            connection.eventLoop.execute { connection.value.closeNow() }
        }
        for (_, finished) in connections {
            try await finished.get()
        }
    }

    // MARK: Faults

    /// Abortively closes both sides of every live connection: `SO_LINGER` is set to 0 so the
    /// close sends a TCP RST, and peers see "connection reset".
    public func resetAllConnections() {
        for connection in self.shared.liveConnections {
            connection.eventLoop.execute { connection.value.reset() }
        }
    }

    /// Closes both sides of every live connection in an orderly way: each peer gets a FIN (after
    /// bytes already handed to the socket) and sees end-of-stream. Data still queued inside the
    /// proxy (stall/latency) is dropped.
    public func cutAllConnections() {
        for connection in self.shared.liveConnections {
            connection.eventLoop.execute { connection.value.cut() }
        }
    }

    /// Stalls or resumes every connection, in both directions.
    ///
    /// While stalled, nothing is forwarded and the proxy stops reading, so TCP backpressure builds
    /// up towards both peers; connections stay open. At most one read batch per side that was
    /// already requested is buffered inside the proxy. Resuming flushes what was held, in order,
    /// and reading continues.
    public func setStalled(_ stalled: Bool) {
        self.shared.state.withLock { $0.settings.stalled = stalled }
        for connection in self.shared.liveConnections {
            connection.eventLoop.execute { connection.value.settingsChanged() }
        }
    }

    /// Delays every forwarded chunk (and end-of-stream) by `latency`, in both directions, preserving
    /// order. Applies to chunks read after the call; `.zero` (or negative) disables the delay.
    public func setLatency(_ latency: Duration) {
        let amount = latency > .zero ? TimeAmount(latency) : .zero
        self.shared.state.withLock { $0.settings.latency = amount }
    }

    /// Makes the next `times` new connections answer with an HTTP error instead of being relayed.
    ///
    /// Each such connection reads the client's request head (up to and including `"\r\n\r\n"`),
    /// then writes `"HTTP/1.1 <status> <reason>\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"`
    /// and closes in an orderly way (FIN, discarding any request body still arriving). Upstream is
    /// not contacted. Stall and latency do not apply to these connections. Replaces any previous
    /// setting; `times <= 0` turns it off.
    ///
    /// - Parameters:
    ///   - status: The status code, 100...999.
    ///   - times: How many new connections get the response.
    public func respondWithStatus(_ status: Int, times: Int) {
        precondition((100...999).contains(status), "HTTP status must be a three-digit code")
        self.shared.state.withLock { state in
            state.statusResponse = times > 0 ? (status, times) : nil
        }
    }

    /// Makes each new connection be cut (orderly, both sides) as soon as exactly `n`
    /// client->upstream bytes were forwarded on it; bytes beyond `n` are never forwarded.
    /// `nil` turns it off. Connections accepted before the call are not affected.
    public func cutAfterUpstreamBytes(_ n: Int?) {
        precondition(n.map { $0 >= 0 } ?? true, "byte count must not be negative")
        self.shared.state.withLock { $0.cutAfterUpstreamBytes = n }
    }

    /// Alters the response to the next HTTP/1.1 request whose head (request line or a header) contains `marker`;
    /// calls queue up, each used once (`times` queues that many: for a client that tries again). The request is
    /// forwarded as it is.
    public func alterResponse(toRequestContaining marker: String, _ alteration: ProxyResponseAlteration, times: Int = 1) {
        self.shared.state.withLock { state in
            for _ in 0..<times { state.responseAlterations.append((marker, alteration)) }
        }
    }

    /// Drops the alterations no request has armed yet; returns how many there were.
    @discardableResult
    public func discardResponseAlterations() -> Int {
        self.shared.state.withLock { state in
            defer { state.responseAlterations.removeAll() }
            return state.responseAlterations.count
        }
    }

    /// Closes (orderly) each connection on which a request head containing `marker` arrives, before that request
    /// reaches upstream (bytes of the head read before it was complete may have gone up); nil stops refusing.
    public func refuseRequests(containing marker: String?) {
        self.shared.state.withLock { $0.refusedRequestMarker = marker }
    }

    /// Keeps every byte clients send from now on, per connection (``clientBytesByConnection``).
    public func recordClientBytes() {
        self.shared.state.withLock { $0.recordsClientBytes = true }
    }

    // MARK: Observations

    /// What clients sent on each connection since ``recordClientBytes()`` (forwarded bytes, decoded as UTF-8 with
    /// replacement), in the order the connections were accepted.
    public var clientBytesByConnection: [String] {
        self.shared.state.withLock { state in
            state.clientBytes.keys.sorted().map { String(decoding: state.clientBytes[$0]!, as: UTF8.self) }
        }
    }

    /// Every HTTP/1.1 request head clients sent through the proxy (request line and header lines, `\r\n` between
    /// them), in the order read, answered by upstream or by ``respondWithStatus(_:times:)``. A connection's heads
    /// are watched until a body of unknown length (chunked) starts on it.
    public var requestHeads: [String] {
        self.shared.state.withLock { $0.requestHeads }
    }

    /// Alterations of ``alterResponse(toRequestContaining:_:)`` no request has armed yet.
    public var pendingResponseAlterations: Int {
        self.shared.state.withLock { $0.responseAlterations.count }
    }

    /// How many client connections were accepted so far.
    public var acceptedConnectionCount: Int {
        self.shared.state.withLock { $0.acceptInstants.count }
    }

    /// When each client connection was accepted, in acceptance order.
    public var acceptInstants: [ContinuousClock.Instant] {
        self.shared.state.withLock { $0.acceptInstants }
    }

    /// Total bytes forwarded from clients to upstream.
    public var bytesToUpstream: Int {
        self.shared.state.withLock { $0.bytesToUpstream }
    }

    /// Total bytes forwarded from upstream to clients.
    public var bytesToClient: Int {
        self.shared.state.withLock { $0.bytesToClient }
    }

    /// Connections with at least one open channel (client or upstream) or an upstream connect
    /// in flight.
    public var liveConnectionCount: Int {
        self.shared.state.withLock { $0.connections.count }
    }

    // MARK: Accepting

    private static func initializeAccepted(
        _ channel: any Channel,
        shared: FaultProxyState,
        upstreamHost: String,
        upstreamPort: Int
    ) -> EventLoopFuture<Void> {
        let acceptedAt = ContinuousClock.now
        let connection = ProxyConnection(
            shared: shared,
            eventLoop: channel.eventLoop,
            clientChannel: channel,
            upstreamHost: upstreamHost,
            upstreamPort: upstreamPort
        )
        let bound = NIOLoopBound(connection, eventLoop: channel.eventLoop)
        guard let (id, mode) = shared.register(connection: bound, acceptedAt: acceptedAt) else {
            // Stopped (or stopping): NIO closes the channel when the initializer fails.
            return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
        }
        connection.configure(id: id, mode: mode)
        channel.closeFuture.whenComplete { _ in shared.channelClosed(id: id) }
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(ProxyGlueHandler(connection: connection, side: .client))
        }
    }
}
