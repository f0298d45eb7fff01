import NIOCore
import NIOPosix
import Synchronization

/// A minimal TCP echo server on `127.0.0.1` for exercising proxies and clients in tests.
///
/// Every byte received on a connection is written back on that connection. Reading is paused
/// while the connection is not writable, so a peer that does not read sees backpressure instead
/// of the server buffering without bound. When the peer half-closes, the server finishes echoing
/// and then closes too.
public final class LoopbackEchoServer: Sendable {
    private struct State {
        var server: (any Channel)?
        var port = 0
        var acceptedConnectionCount = 0
        var liveChannels: [ObjectIdentifier: any Channel] = [:]
        var bytesReceived = 0
        var stopped = false
    }

    private let group: any EventLoopGroup
    private let state = Mutex(State())

    /// Creates a server; call ``start()`` to bind it.
    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.group = group
    }

    /// Binds to `127.0.0.1` on an ephemeral port (see ``port``).
    public func start() async throws {
        let counters = EchoCounters(owner: self)
        let channel = try await ServerBootstrap(group: self.group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.autoRead, value: false)
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                guard counters.accepted(channel) else {
                    return channel.eventLoop.makeFailedFuture(ChannelError.ioOnClosedChannel)
                }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(EchoHandler(counters: counters))
                }
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        self.state.withLock { state in
            state.server = channel
            state.port = channel.localAddress?.port ?? 0
        }
    }

    /// The bound port; 0 before ``start()`` returned.
    public var port: Int {
        self.state.withLock { $0.port }
    }

    /// Connections accepted so far.
    public var acceptedConnectionCount: Int {
        self.state.withLock { $0.acceptedConnectionCount }
    }

    /// Connections currently open.
    public var liveConnectionCount: Int {
        self.state.withLock { $0.liveChannels.count }
    }

    /// Total bytes received (and echoed) over all connections.
    public var bytesReceived: Int {
        self.state.withLock { $0.bytesReceived }
    }

    /// Closes the listener and every connection, and waits for them to be closed.
    public func stop() async throws {
        let (server, channels) = self.state.withLock { state in
            state.stopped = true
            let server = state.server
            state.server = nil
            return (server, Array(state.liveChannels.values))
        }
        if let server {
            try? await server.close()
        }
        for channel in channels {
            channel.close(promise: nil)
        }
        for channel in channels {
            try? await channel.closeFuture.get()
        }
    }

    fileprivate func accepted(_ channel: any Channel) -> Bool {
        let key = ObjectIdentifier(channel)
        let ok = self.state.withLock { state in
            guard !state.stopped else { return false }
            state.acceptedConnectionCount += 1
            state.liveChannels[key] = channel
            return true
        }
        if ok {
            channel.closeFuture.whenComplete { _ in
                self.state.withLock { _ = $0.liveChannels.removeValue(forKey: key) }
            }
        }
        return ok
    }

    fileprivate func received(_ count: Int) {
        self.state.withLock { $0.bytesReceived += count }
    }
}

/// Sendable handle the handlers use to report to the server (keeps the server's state private).
private struct EchoCounters: Sendable {
    let owner: LoopbackEchoServer

    func accepted(_ channel: any Channel) -> Bool { self.owner.accepted(channel) }
    func received(_ count: Int) { self.owner.received(count) }
}

private final class EchoHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let counters: EchoCounters
    private var inputClosed = false

    init(counters: EchoCounters) {
        self.counters = counters
    }

    func channelActive(context: ChannelHandlerContext) {
        context.read()
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        self.counters.received(buffer.readableBytes)
        context.write(data, promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.flush()
        if context.channel.isWritable {
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable && !self.inputClosed {
            context.read()
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, case .inputClosed = event {
            self.inputClosed = true
            // Output is shut down once everything echoed is written; NIO then closes fully.
            context.flush()
            context.close(mode: .output, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
