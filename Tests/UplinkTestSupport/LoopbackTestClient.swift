import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A raw TCP client for tests: writes bytes, records everything it receives and how the
/// connection ended. Thread-safe; all members may be called from any task.
public final class LoopbackTestClient: Sendable {
    /// How the connection ended.
    public enum Termination: Sendable, Equatable {
        /// The peer closed in an orderly way (FIN) and no error was seen.
        case endOfStream
        /// The peer reset the connection (ECONNRESET / EPIPE).
        case reset
        /// Some other error ended the connection.
        case error(String)
        /// This client closed the connection itself via ``close()``.
        case closedLocally
    }

    private let channel: any Channel
    private let recorder: ConnectionRecord

    private init(channel: any Channel, recorder: ConnectionRecord) {
        self.channel = channel
        self.recorder = recorder
    }

    /// Connects to `host:port`. `first`, when not empty, is written as soon as the connection is up, on its event
    /// loop: not when the calling task runs next, which a loaded machine can delay past a peer's deadline.
    public static func connect(
        host: String = "127.0.0.1",
        port: Int,
        sendingFirst first: [UInt8] = [],
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> LoopbackTestClient {
        let recorder = ConnectionRecord()
        let channel = try await ClientBootstrap(group: group)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RecordingHandler(recorder: recorder))
                }
            }
            .connect(host: host, port: port)
            .flatMap { channel in
                guard !first.isEmpty else { return channel.eventLoop.makeSucceededFuture(channel) }
                return channel.writeAndFlush(channel.allocator.buffer(bytes: first)).map { channel }
            }
            .get()
        return LoopbackTestClient(channel: channel, recorder: recorder)
    }

    /// Writes and flushes `bytes` without waiting for the write to complete (failures are ignored;
    /// they show up in ``termination``).
    public func send(_ bytes: [UInt8]) {
        self.channel.writeAndFlush(self.channel.allocator.buffer(bytes: bytes), promise: nil)
    }

    /// Writes and flushes `bytes` and waits until they were handed to the kernel.
    public func sendAndWait(_ bytes: [UInt8]) async throws {
        try await self.channel.writeAndFlush(self.channel.allocator.buffer(bytes: bytes)).get()
    }

    /// Half-closes: sends FIN after everything written so far, keeps receiving.
    public func shutdownOutput() async throws {
        try await self.channel.close(mode: .output).get()
    }

    /// Closes the connection (if still open) and waits until it is closed.
    public func close() async {
        self.recorder.state.withLock { $0.closingLocally = true }
        self.channel.close(promise: nil)
        try? await self.channel.closeFuture.get()
    }

    /// Everything received so far, in order.
    public var received: [UInt8] {
        self.recorder.state.withLock { $0.received }
    }

    /// Number of bytes received so far.
    public var receivedCount: Int {
        self.recorder.state.withLock { $0.received.count }
    }

    /// How the connection ended, or `nil` while it is open.
    public var termination: Termination? {
        self.recorder.state.withLock { $0.termination }
    }

    /// Whether the channel accepts more writes without exceeding its write-buffer high-water mark.
    public var isWritable: Bool {
        self.channel.isWritable
    }

    /// Bytes written by this client that are still waiting in its own (user-space) send buffer,
    /// i.e. that the kernel did not accept yet.
    public func bufferedOutboundBytes() async throws -> Int {
        try await self.channel.getOption(ChannelOptions.bufferedWritableBytes).get()
    }

    /// Classifies `error` the way ``Termination`` reports it.
    static func classify(_ error: any Error) -> Termination {
        if let error = error as? IOError, error.errnoCode == ECONNRESET || error.errnoCode == EPIPE {
            return .reset
        }
        return .error(String(describing: error))
    }
}

/// The shared record of one connection, written by its handler and read by the client.
private final class ConnectionRecord: Sendable {
    struct State {
        var received: [UInt8] = []
        var firstError: (any Error)?
        var termination: LoopbackTestClient.Termination?
        var closingLocally = false
    }

    let state = Mutex(State())
}

private final class RecordingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let recorder: ConnectionRecord

    init(recorder: ConnectionRecord) {
        self.recorder = recorder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        buffer.withUnsafeReadableBytes { bytes in
            self.recorder.state.withLock { $0.received.append(contentsOf: bytes) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.recorder.state.withLock { state in
            if state.firstError == nil { state.firstError = error }
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.recorder.state.withLock { state in
            if let error = state.firstError {
                state.termination = LoopbackTestClient.classify(error)
            } else if state.closingLocally {
                state.termination = .closedLocally
            } else {
                state.termination = .endOfStream
            }
        }
        context.fireChannelInactive()
    }
}
