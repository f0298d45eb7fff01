import NIOCore
import NIOExtras
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import UplinkCore

/// Opens the connection one stream runs on, on the driver's loop, and puts the stream's exchange handler at its end:
/// TCP to the collector or to `uplink.proxy` (then a `CONNECT` tunnel to the collector), TLS for an `https://` URL
/// (offering HTTP/2 and HTTP/1.1 through ALPN, verifying `tls.server_name` when set), then an HTTP/1.1 pipeline or
/// one HTTP/2 stream. Everything up to the exchange's first byte is bounded by `uplink.connect_timeout` (name
/// resolution, TCP, the proxy's answer and the TLS handshake together); a refused connection fails at once.
///
/// The uplink's own client instead of a general one: a stream is one long request whose body the uplink writes a
/// chunk at a time, so the chunk goes straight from the pair into the channel, without a general client's request
/// and connection state machines and promise chains on every chunk (docs/architecture.md, "A connection of its
/// own").
enum StreamConnector {
    /// Where a stream connects, from the uplink's settings.
    struct Endpoint {
        /// The host and port the TCP connection goes to: the proxy's, or the collector's.
        var connectHost: String
        var connectPort: Int
        /// The URL's host (bare, without brackets) and port: where the connection goes, through the proxy's tunnel when
        /// there is one.
        var host: String
        var port: Int
        var usesTLS: Bool
        /// The name the collector's certificate must show, sent as SNI and in `Host`: `tls.server_name` when set, else
        /// `host`.
        var serverName: String
        var proxy: UplinkProxy?
        /// The request's path (with the URL's own path in front of `/v1/stream`).
        var path: String

        init?(_ configuration: UplinkConfiguration) {
            guard let target = ProxyEnvironment.Target(url: configuration.url) else { return nil }
            host = target.host
            port = target.port
            usesTLS = target.isHTTPS
            serverName = (usesTLS ? configuration.tls.serverName : nil) ?? target.host
            proxy = configuration.proxy
            connectHost = proxy?.host ?? target.host
            connectPort = proxy?.port ?? target.port
            path = target.path + "/v1/stream"
        }

        /// `serverName` as a URI authority (`Host`): the port only when it is not the scheme's default.
        var authority: String {
            let name = Self.uriHost(serverName)
            return port == (usesTLS ? 443 : 80) ? name : "\(name):\(port)"
        }

        /// `host` as the proxy's `CONNECT` target writes it (the handler adds `:port`), and `host:port` whole.
        var tunnelTargetHost: String { Self.uriHost(host) }
        var tunnelTarget: String { "\(tunnelTargetHost):\(port)" }

        /// A host as a URI writes it: an IPv6 address in brackets.
        private static func uriHost(_ host: String) -> String {
            host.contains(":") ? "[\(host)]" : host
        }
    }

    /// Connects and installs `exchange` as the exchange's last handler; call on `loop`. `sslContext`: for an
    /// `https://` URL, the context as it is being made (`StreamTLSContexts`); the connect timeout covers the wait for
    /// it too. The future succeeds with the connection's channel once the exchange is in place; it fails with why the
    /// connection could not be made.
    static func connect(
        _ endpoint: Endpoint, sslContext: EventLoopFuture<NIOSSLContext>?, connectTimeout: Duration,
        loop: any EventLoop, exchange: StreamExchangeHandler
    ) -> EventLoopFuture<any Channel> {
        let ready = loop.makePromise(of: (any Channel).self)
        let deadline = NIODeadline.now() + .nanoseconds(connectTimeout.nanoseconds)
        let timeout = loop.scheduleTask(deadline: deadline) {
            ready.fail(StreamConnectTimeout(timeout: connectTimeout))
        }
        ready.futureResult.whenComplete { _ in timeout.cancel() }
        let context = sslContext.map { $0.map(Optional.some) } ?? loop.makeSucceededFuture(nil)
        context.assumeIsolated().whenComplete { result in
            switch result {
            case .failure(let error):
                ready.fail(error)
            case .success(let sslContext):
                establish(endpoint, sslContext: sslContext, deadline: deadline, loop: loop, exchange: exchange, ready: ready)
            }
        }
        return ready.futureResult
    }

    /// `connect` once the TLS context is there: TCP, the tunnel, TLS and the exchange's handlers, completing `ready`.
    private static func establish(
        _ endpoint: Endpoint, sslContext: NIOSSLContext?, deadline: NIODeadline, loop: any EventLoop,
        exchange: StreamExchangeHandler, ready: EventLoopPromise<any Channel>
    ) {
        // A connect timeout that fired while the context was made: nothing more to do.
        guard deadline > .now() else { return }
        // NIO's client bootstrap sets TCP_NODELAY itself: a chunk goes out when it is written.
        let bootstrap = ClientBootstrap(group: loop).connectTimeout(deadline - .now())
        bootstrap.connect(host: endpoint.connectHost, port: endpoint.connectPort).assumeIsolated().whenComplete { result in
            switch result {
            case .failure(let error):
                ready.fail(error)
            case .success(let channel):
                // A connect timeout that fired meanwhile closes what came too late.
                ready.futureResult.whenFailure { _ in channel.close(promise: nil) }
                tunnel(channel, endpoint, deadline: deadline).assumeIsolated().flatMap {
                    secure(channel, endpoint, sslContext)
                }.flatMap { http2 in
                    install(exchange, on: channel, http2: http2)
                }.whenComplete { result in
                    switch result {
                    case .success: ready.succeed(channel)
                    case .failure(let error): ready.fail(error)
                    }
                }
            }
        }
    }

    /// Through a proxy: asks it for a `CONNECT` tunnel to the collector, then takes its HTTP handlers off again.
    private static func tunnel(_ channel: any Channel, _ endpoint: Endpoint, deadline: NIODeadline) -> EventLoopFuture<Void> {
        guard let proxy = endpoint.proxy else { return channel.eventLoop.makeSucceededVoidFuture() }
        let established = channel.eventLoop.makePromise(of: Void.self)
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: endpoint.tunnelTarget)
        if let username = proxy.username {
            let credentials = Base64.encode(Array("\(username):\(proxy.password ?? "")".utf8))
            headers.add(name: "Proxy-Authorization", value: "Basic \(credentials)")
        }
        do {
            let operations = channel.pipeline.syncOperations
            let encoder = HTTPRequestEncoder()
            let decoder = ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .forwardBytes))
            try operations.addHandler(encoder)
            try operations.addHandler(decoder)
            try operations.addHandler(
                NIOHTTP1ProxyConnectHandler(
                    targetHost: endpoint.tunnelTargetHost, targetPort: endpoint.port, headers: headers, deadline: deadline,
                    promise: established))
            return established.futureResult.assumeIsolated().flatMap {
                channel.pipeline.syncOperations.removeHandler(encoder)
                    .and(channel.pipeline.syncOperations.removeHandler(decoder)).map { _ in }
            }.nonisolated()
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    /// With TLS: the handshake, and whether the collector chose HTTP/2. Without: HTTP/1.1.
    private static func secure(_ channel: any Channel, _ endpoint: Endpoint, _ context: NIOSSLContext?) -> EventLoopFuture<Bool> {
        guard let context else { return channel.eventLoop.makeSucceededFuture(false) }
        do {
            // SNI carries names only; an address is verified against the certificate's IP entries.
            let isAddress = (try? SocketAddress(ipAddress: endpoint.serverName, port: 0)) != nil
            let handshake = channel.eventLoop.makePromise(of: String?.self)
            try channel.pipeline.syncOperations.addHandler(
                NIOSSLClientHandler(context: context, serverHostname: isAddress ? nil : endpoint.serverName))
            try channel.pipeline.syncOperations.addHandler(HandshakeCompletion(handshake))
            return handshake.futureResult.map { $0 == "h2" }
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    /// The HTTP/1.1 codec and the exchange, or an HTTP/2 connection with one stream that carries the exchange.
    private static func install(
        _ exchange: StreamExchangeHandler, on channel: any Channel, http2: Bool
    ) -> EventLoopFuture<Void> {
        do {
            return try installThrowing(exchange, on: channel, http2: http2)
        } catch {
            return channel.eventLoop.makeFailedFuture(error)
        }
    }

    private static func installThrowing(
        _ exchange: StreamExchangeHandler, on channel: any Channel, http2: Bool
    ) throws -> EventLoopFuture<Void> {
        let operations = channel.pipeline.syncOperations
        guard http2 else {
            let encoder = HTTPRequestEncoder()
            try operations.addHandler(encoder)
            try operations.addHandler(ByteToMessageHandler(HTTPResponseDecoder(leftOverBytesStrategy: .dropBytes)))
            exchange.frameChunks(below: try operations.context(handler: encoder))
            try operations.addHandler(exchange)
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        let multiplexer = try operations.configureHTTP2Pipeline(
            mode: .client, connectionConfiguration: .init(), streamConfiguration: .init(), streamDelegate: nil
        ) { inbound in
            // The collector opens no streams of its own.
            inbound.close()
        }
        let created = channel.eventLoop.makePromise(of: (any Channel).self)
        let boundExchange = NIOLoopBound(exchange, eventLoop: channel.eventLoop)
        multiplexer.createStreamChannel(promise: created) { stream in
            stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ClientCodec(httpProtocol: .https))
                try stream.pipeline.syncOperations.addHandler(boundExchange.value)
            }
        }
        return created.futureResult.map { stream in
            // The stream ending ends the connection: each stream has one of its own.
            stream.closeFuture.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    // MARK: Errors

    /// Whether `error` is one of the deadlines of making a connection: ours, the TCP connect's or the proxy's.
    private static func isConnectTimeout(_ error: any Error) -> Bool {
        if error is StreamConnectTimeout { return true }
        if case ChannelError.connectTimeout = error { return true }
        return (error as? NIOHTTP1ProxyConnectHandler.Error) == .httpProxyHandshakeTimeout()
    }

    /// Whether `error` is a proxy's `407`.
    static func isProxyAuthenticationRequired(_ error: any Error) -> Bool {
        (error as? NIOHTTP1ProxyConnectHandler.Error) == .proxyAuthenticationRequired()
    }

    /// How a failed connection or exchange reads in the log and in `uplink status`. `connectTimeout`: the timeout
    /// to name when the connection was not made in time.
    static func describe(_ error: any Error, connectTimeout: Duration?) -> String {
        if let tls = TLSErrorText.describe(error) { return tls }
        if isConnectTimeout(error) {
            let timeout = connectTimeout.map { "\($0), " } ?? ""
            return "no connection within the connect timeout (\(timeout)uplink.connect_timeout)"
        }
        if let error = error as? NIOConnectionError {
            // One failure per address tried; the first says what happened (all are alike on one host).
            if let first = error.connectionErrors.first?.error { return describe(first, connectTimeout: connectTimeout) }
            if let dns = error.dnsAError ?? error.dnsAAAAError { return "cannot resolve \(error.host): \(dns)" }
            return "cannot connect to \(error.host):\(error.port)"
        }
        if let error = error as? HTTPParserError {
            return "the collector's answer is not HTTP (\(error)); is uplink.url the collector's?"
        }
        if let error = error as? NIOHTTP1ProxyConnectHandler.Error {
            return "the HTTP proxy did not open a tunnel to the collector: \(error)"
        }
        if ConnectFailureText.isRefused(error) {
            return ConnectFailureText.describe(error) + " (nothing accepts connections at that address and port)"
        }
        return ConnectFailureText.describe(error)
    }
}

/// No connection within `uplink.connect_timeout`.
struct StreamConnectTimeout: Error, CustomStringConvertible {
    let timeout: Duration
    var description: String { "no connection within \(timeout)" }
}

/// Waits for the TLS handshake: the protocol ALPN chose, or the handshake's failure.
private final class HandshakeCompletion: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    private let promise: EventLoopPromise<String?>

    init(_ promise: EventLoopPromise<String?>) {
        self.promise = promise
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        context.fireUserInboundEventTriggered(event)
        if let event = event as? TLSUserEvent, case .handshakeCompleted(let negotiated) = event {
            // The exchange's handlers go in behind this one as the promise completes; then it leaves.
            promise.succeed(negotiated)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.fireErrorCaught(error)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(StreamConnectionClosed())
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        promise.fail(StreamConnectionClosed())
    }
}
