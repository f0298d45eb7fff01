import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// An HTTP/1.1 server on 127.0.0.1 whose every answer a test scripts: a whole response, a body that never ends, a
/// body cut short (the connection closed before `Content-Length` bytes), or one that stops sending and keeps the
/// connection open. It records every request's head, so a test can assert what a client sent (`Range`, `If-Range`).
///
/// ```swift
/// let server = TestHTTPServer { request in .full(status: 200, headers: [], body: Array("hi".utf8)) }
/// try await server.start()
/// defer { Task { await server.stop() } }
/// ```
public final class TestHTTPServer: Sendable {
    /// A request's head.
    public struct Request: Sendable {
        public let method: String
        public let uri: String
        public let headers: [(name: String, value: String)]

        /// The first value of the header `name` (any case).
        public func header(_ name: String) -> String? {
            headers.first { $0.name.lowercased() == name.lowercased() }?.value
        }
    }

    /// What to answer. `headers` are added to the head as they are; `.full` and `.cut` add `Content-Length` unless
    /// `headers` has one, `.endless` and `.stall` send none (chunked).
    public enum Response: Sendable {
        /// The whole response.
        case full(status: Int, headers: [(String, String)], body: [UInt8])
        /// `chunk` again and again, as fast as the client reads, until the client closes the connection.
        case endless(status: Int, headers: [(String, String)], chunk: [UInt8])
        /// The head with `Content-Length: announced`, then `body` (shorter), then the connection is closed.
        case cut(status: Int, headers: [(String, String)], body: [UInt8], announced: Int)
        /// The head and `body`, then nothing more on a connection left open (until `stop()`).
        case stall(status: Int, headers: [(String, String)], body: [UInt8])
    }

    private struct State {
        var channel: (any Channel)?
        var children: [ObjectIdentifier: any Channel] = [:]
        var requests: [Request] = []
        var endlessBytes = 0
    }

    private let state = Mutex(State())
    private let respond: @Sendable (Request) -> Response

    public init(respond: @escaping @Sendable (Request) -> Response) {
        self.respond = respond
    }

    /// Every request received so far, in order.
    public var requests: [Request] { state.withLock { $0.requests } }
    /// Connections open now (the server never closes an idle one itself).
    public var openConnections: Int { state.withLock { $0.children.count } }
    /// Body bytes handed to the socket for `.endless` answers so far.
    public var endlessBytesWritten: Int { state.withLock { $0.endlessBytes } }

    /// Binds an ephemeral port on 127.0.0.1 and returns it.
    @discardableResult
    public func start() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                self.state.withLock { $0.children[ObjectIdentifier(channel)] = channel }
                channel.closeFuture.whenComplete { _ in
                    _ = self.state.withLock { $0.children.removeValue(forKey: ObjectIdentifier(channel)) }
                }
                return channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(Handler(server: self))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        state.withLock { $0.channel = channel }
        return channel.localAddress!.port!
    }

    /// `http://127.0.0.1:<port>`.
    public var url: String {
        "http://127.0.0.1:\(state.withLock { $0.channel?.localAddress?.port ?? 0 })"
    }

    /// Closes the listener and every connection.
    public func stop() async {
        let (channel, children) = state.withLock { ($0.channel, Array($0.children.values)) }
        for child in children { try? await child.close() }
        try? await channel?.close()
    }

    fileprivate func answer(_ request: Request) -> Response {
        state.withLock { $0.requests.append(request) }
        return respond(request)
    }

    fileprivate func countEndless(_ bytes: Int) {
        state.withLock { $0.endlessBytes += bytes }
    }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart

        let server: TestHTTPServer
        var head: HTTPRequestHead?

        init(server: TestHTTPServer) { self.server = server }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): self.head = head
            case .body: break
            case .end:
                guard let head else { return }
                let request = Request(
                    method: head.method.rawValue, uri: head.uri, headers: head.headers.map { ($0.name, $0.value) })
                respond(server.answer(request), context: context)
            }
        }

        private func responseHead(status: Int, headers: [(String, String)], length: Int?) -> HTTPServerResponsePart {
            var fields = HTTPHeaders(headers)
            if let length, !fields.contains(name: "Content-Length") {
                fields.add(name: "Content-Length", value: String(length))
            }
            return .head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: status), headers: fields))
        }

        private func respond(_ response: Response, context: ChannelHandlerContext) {
            switch response {
            case .full(let status, let headers, let body):
                context.write(wrapOutboundOut(responseHead(status: status, headers: headers, length: body.count)), promise: nil)
                if !body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            case .cut(let status, let headers, let body, let announced):
                context.write(wrapOutboundOut(responseHead(status: status, headers: headers, length: announced)), promise: nil)
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body))))).whenComplete { _ in
                    channel.close(promise: nil)
                }
            case .stall(let status, let headers, let body):
                context.write(wrapOutboundOut(responseHead(status: status, headers: headers, length: nil)), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
            case .endless(let status, let headers, let chunk):
                context.writeAndFlush(wrapOutboundOut(responseHead(status: status, headers: headers, length: nil)), promise: nil)
                writeForever(ByteBuffer(bytes: chunk), context: context)
            }
        }

        /// Writes `chunk` each time the previous write reached the socket, until the connection fails or closes.
        private func writeForever(_ chunk: ByteBuffer, context: ChannelHandlerContext) {
            let part = wrapOutboundOut(.body(.byteBuffer(chunk)))
            let server = self.server
            let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            context.writeAndFlush(part).whenComplete { result in
                guard case .success = result else { return }
                server.countEndless(chunk.readableBytes)
                // The next write from a fresh event loop turn: a write that completes at once must not recurse.
                loopBound.eventLoop.execute {
                    let (handler, context) = loopBound.value
                    guard context.channel.isActive else { return }
                    handler.writeForever(chunk, context: context)
                }
            }
        }
    }
}
