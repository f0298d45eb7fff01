import Hummingbird
import HummingbirdCore
import HummingbirdHTTP2
import Logging
import NIOCore
import NIOSSL

/// The collector's network edge, shared by its channel handlers: counts and the log limiter.
struct CollectorEdge: Sendable {
    let recorder = EdgeRecorder()
    let limiter = LogRateLimiter()
}

extension Collector {
    /// How connections are served: plaintext HTTP/1.1, or TLS with ALPN offering h2 and http/1.1; either way with
    /// the request deadlines of `RequestDeadlineHandler` on every request pipeline (an HTTP/1.1 connection or an
    /// HTTP/2 stream), and after it the `StreamBodyTap` that hands a stream request's body to its stream.
    func serverBuilder(tls: TLSConfiguration?) -> HTTPServerBuilder {
        let headTimeout = TimeAmount(configuration.requestHeadTimeout)
        let idleTimeout = TimeAmount(configuration.streamIdleTimeout)
        let edge = self.edge
        let logger = self.logger
        let requests = HTTP1Channel.Configuration(
            additionalChannelHandlers: [
                RequestDeadlineHandler(
                    headTimeout: headTimeout, idleTimeout: idleTimeout, edge: edge.recorder, limiter: edge.limiter,
                    logger: logger),
                StreamBodyTap(holdLimit: StreamBodyTap.defaultHoldLimit),
            ])
        guard let tls else { return .http1(configuration: requests) }
        let connections = HTTP2UpgradeChannel.Configuration(
            // An HTTP/2 connection without any open stream is closed after this long.
            idleTimeout: configuration.requestHeadTimeout, gracefulCloseTimeout: .seconds(5),
            streamConfiguration: requests)
        return HTTPServerBuilder { responder in
            let upgrade = try HTTP2UpgradeChannel(tlsConfiguration: tls, configuration: connections, responder: responder)
            return HandshakeGuardedChannel(
                inner: upgrade, timeout: headTimeout, edge: edge, logger: logger)
        }
    }

    /// Puts the `AcceptGuard` in front of the listening socket's pipeline.
    func guardAccepting(_ channel: any Channel) async {
        let edge = self.edge
        let logger = self.logger
        do {
            try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.addHandler(
                    AcceptGuard(edge: edge.recorder, limiter: edge.limiter, logger: logger), position: .first)
            }.get()
        } catch {
            logger.warning("Could not guard the listening socket against descriptor exhaustion", metadata: ["error": "\(error)"])
        }
    }
}

/// A TLS child channel with a `TLSHandshakeGuard` right after its TLS handler.
struct HandshakeGuardedChannel<Inner: ServerChildChannel>: ServerChildChannel {
    typealias Value = Inner.Value

    let inner: Inner
    let timeout: TimeAmount
    let edge: CollectorEdge
    let logger: Logger

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let operations = channel.pipeline.syncOperations
            let tls = try operations.handler(type: NIOSSLServerHandler.self)
            try operations.addHandler(
                TLSHandshakeGuard(timeout: timeout, edge: edge.recorder, limiter: edge.limiter, logger: self.logger),
                position: .after(tls))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
    }
}
