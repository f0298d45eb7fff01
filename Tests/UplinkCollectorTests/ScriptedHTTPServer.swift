import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// An HTTP/1.1 server on 127.0.0.1 standing in for "any other store" of the generic `http` sink: it answers every
/// request with the status `respond` returns and keeps the bodies of the requests it answered 2xx.
final class ScriptedHTTPServer: Sendable {
    private struct State {
        var status: UInt = 200
        var accepted: [[UInt8]] = []
        var acceptedEncodings: [String?] = []
        var acceptedPaths: [String] = []
        var requests = 0
        var channel: (any Channel)?
    }
    private let state = Mutex(State())

    /// The status answered from now on.
    func respond(_ status: UInt) { state.withLock { $0.status = status } }
    /// Bodies answered with 2xx, in order.
    var acceptedBodies: [[UInt8]] { state.withLock { $0.accepted } }
    /// The `Content-Encoding` of each accepted body (nil: none), in order.
    var acceptedEncodings: [String?] { state.withLock { $0.acceptedEncodings } }
    /// The request target (path and query) of each accepted request, in order.
    var acceptedPaths: [String] { state.withLock { $0.acceptedPaths } }
    var requestCount: Int { state.withLock { $0.requests } }

    func start() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap { channel.pipeline.addHandler(Handler(server: self)) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        state.withLock { $0.channel = channel }
        return channel.localAddress!.port!
    }

    func stop() async {
        let channel = state.withLock { $0.channel }
        try? await channel?.close()
    }

    fileprivate func answer(_ body: [UInt8], encoding: String?, path: String) -> UInt {
        state.withLock { state in
            state.requests += 1
            if (200..<300).contains(state.status) {
                state.accepted.append(body)
                state.acceptedEncodings.append(encoding)
                state.acceptedPaths.append(path)
            }
            return state.status
        }
    }

    private final class Handler: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let server: ScriptedHTTPServer
        var body: [UInt8] = []
        var encoding: String?
        var path = ""

        init(server: ScriptedHTTPServer) { self.server = server }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                body = []
                encoding = head.headers.first(name: "Content-Encoding")
                path = head.uri
            case .body(let buffer): body.append(contentsOf: buffer.readableBytesView)
            case .end:
                let status = server.answer(body, encoding: encoding, path: path)
                let text = ByteBuffer(string: "status \(status)\n")
                var headers = HTTPHeaders()
                headers.add(name: "Content-Length", value: String(text.readableBytes))
                context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: Int(status)), headers: headers))), promise: nil)
                context.write(wrapOutboundOut(.body(.byteBuffer(text))), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
