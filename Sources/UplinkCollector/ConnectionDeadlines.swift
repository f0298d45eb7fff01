import Logging
import NIOCore
import NIOHTTPTypes
import NIOSSL
import NIOTLS

/// The deadlines of one HTTP request pipeline (an HTTP/1.1 connection, or one HTTP/2 stream): the request head must
/// be complete within `headTimeout` (from the start, and again between kept-alive requests), and a request body
/// that is being read must bring bytes at least every `idleTimeout`. A connection or stream past either deadline is
/// closed. Sits right after the HTTP codec, so it sees request parts, not bytes.
///
/// Time during which nobody downstream asked for more of the body (the collector applies back-pressure while its
/// storage catches up) does not count towards the idle timeout: the clock restarts when reading resumes.
final class RequestDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum Phase {
        /// Until the request head: closed at `deadline`.
        case awaitingHead(deadline: NIODeadline)
        /// The body is being read; `requestEnded` false.
        case readingBody
        /// The request ended, the response did not: no deadline (the response is the collector's business).
        case responding
    }

    private let headTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private let edge: EdgeRecorder
    private let limiter: LogRateLimiter
    private let logger: Logger
    private var phase: Phase?
    private var responseEnded = false
    private var lastProgress = NIODeadline.now()
    private var readOutstanding = false
    private var timer: Scheduled<Void>?

    init(headTimeout: TimeAmount, idleTimeout: TimeAmount, edge: EdgeRecorder, limiter: LogRateLimiter, logger: Logger) {
        self.headTimeout = headTimeout
        self.idleTimeout = idleTimeout
        self.edge = edge
        self.limiter = limiter
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { awaitHead(context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        cancelTimer()
    }

    func channelActive(context: ChannelHandlerContext) {
        if phase == nil { awaitHead(context) }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        cancelTimer()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        readOutstanding = false
        lastProgress = .now()
        switch unwrapInboundIn(data) {
        case .head:
            phase = .readingBody
            responseEnded = false
            schedule(context, at: lastProgress + idleTimeout)
        case .body:
            break
        case .end:
            if responseEnded { awaitHead(context) } else { phase = .responding; cancelTimer() }
        }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        if case .readingBody = phase, !readOutstanding {
            // Reading resumes: whatever time passed while nobody asked for more is not the peer's silence.
            readOutstanding = true
            lastProgress = .now()
        }
        context.read()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else { return context.write(data, promise: promise) }
        responseEnded = true
        switch phase {
        case .responding?:
            awaitHead(context)
        case .readingBody?:
            // Answered before the request ended (a refusal): the rest of the body is of no use, and over HTTP/2 the
            // stream would otherwise stay open until the agent gives up. Close once the answer is out.
            cancelTimer()
            let written = promise ?? context.eventLoop.makePromise()
            let closing = NIOLoopBound(context, eventLoop: context.eventLoop)
            written.futureResult.whenComplete { _ in closing.value.close(promise: nil) }
            context.writeAndFlush(data, promise: written)
            return
        default:
            break
        }
        context.write(data, promise: promise)
    }

    private func awaitHead(_ context: ChannelHandlerContext) {
        let deadline = NIODeadline.now() + headTimeout
        phase = .awaitingHead(deadline: deadline)
        schedule(context, at: deadline)
    }

    private func schedule(_ context: ChannelHandlerContext, at deadline: NIODeadline) {
        cancelTimer()
        timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { [self] in
            timer = nil
            expire(context)
        }
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
    }

    private func expire(_ context: ChannelHandlerContext) {
        let now = NIODeadline.now()
        switch phase {
        case .awaitingHead(let deadline)?:
            guard now >= deadline else { return schedule(context, at: deadline) }
            context.closeForTimeout(
                .headTimeout, kind: "head-timeout", "Closed a connection that sent no complete request head in time",
                timeout: headTimeout, edge: edge, limiter: limiter, logger: logger)
        case .readingBody?:
            guard readOutstanding else {
                // The collector is not reading: look again a full timeout later.
                return schedule(context, at: now + idleTimeout)
            }
            let deadline = lastProgress + idleTimeout
            guard now >= deadline else { return schedule(context, at: deadline) }
            context.closeForTimeout(
                .idleTimeout, kind: "idle-timeout", "Ended a stream whose request body brought nothing for the idle timeout",
                timeout: idleTimeout, edge: edge, limiter: limiter, logger: logger)
        case .responding?, nil:
            break
        }
    }
}

/// Sits right after the TLS handler of a connection: closes it if the handshake is not finished within `timeout`,
/// and logs (rate-limited) and counts handshakes that fail, with the reason swift-nio-ssl gives.
final class TLSHandshakeGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let timeout: TimeAmount
    private let edge: EdgeRecorder
    private let limiter: LogRateLimiter
    private let logger: Logger
    private var timer: Scheduled<Void>?
    private var done = false

    init(timeout: TimeAmount, edge: EdgeRecorder, limiter: LogRateLimiter, logger: Logger) {
        self.timeout = timeout
        self.edge = edge
        self.limiter = limiter
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: timeout) { [self] in
            timer = nil
            guard !done else { return }
            done = true
            context.closeForTimeout(
                .headTimeout, kind: "handshake-timeout", "Closed a connection that did not finish the TLS handshake in time",
                timeout: timeout, edge: edge, limiter: limiter, logger: logger)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event, !done {
            done = true
            timer?.cancel()
            timer = nil
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Only a refused handshake: a peer that connects and goes away (a port probe) is not worth a warning.
        if !done, let error = error as? NIOSSLError, case .handshakeFailed = error {
            done = true
            timer?.cancel()
            timer = nil
            edge.record(.tlsHandshakeFailure)
            limiter.log(
                logger, .warning, kind: "handshake-failure", "Refused a TLS connection: the handshake failed",
                metadata: [
                    "peer": "\(context.channel.remotePeerDescription)", "reason": "\(Self.reason(error))",
                    "error": "\(error)",
                ])
        }
        context.fireErrorCaught(error)
    }

    /// A plain-words reason for the usual handshake failures, from BoringSSL's error text.
    static func reason(_ error: any Error) -> String {
        let text = "\(error)"
        let known: [(String, String)] = [
            ("PEER_DID_NOT_RETURN_A_CERTIFICATE", "the client presented no certificate and one is required"),
            ("CERTIFICATE_VERIFY_FAILED", "the client certificate is not valid: expired, not yet valid, or not issued by client_ca_file"),
            ("certificate has expired", "the client certificate has expired"),
            ("unable to get local issuer certificate", "the client certificate is not issued by client_ca_file"),
            ("NO_SHARED_CIPHER", "no cipher suite in common"),
            ("UNSUPPORTED_PROTOCOL", "the client offers no TLS version the collector accepts (TLS 1.2 or later)"),
            ("WRONG_VERSION_NUMBER", "the client did not speak TLS (plain HTTP to a TLS port?)"),
            ("HTTP_REQUEST", "the client sent plain HTTP to a TLS port"),
        ]
        return known.first { text.contains($0.0) }?.1 ?? "TLS handshake error"
    }
}

extension Channel {
    /// The peer's address as text, or `unknown`.
    var remotePeerDescription: String {
        remoteAddress.map { "\($0)" } ?? "unknown"
    }
}

extension TimeAmount {
    /// `400 ms`, for log lines.
    var millisecondsText: String { "\(nanoseconds / 1_000_000) ms" }
}

extension ChannelHandlerContext {
    /// How a deadline of this file ends a connection or stream: counts `event`, logs `message` at info level
    /// (rate-limited per `kind`) with the peer and the `timeout`, and closes.
    fileprivate func closeForTimeout(
        _ event: EdgeRecorder.Event, kind: String, _ message: Logger.Message, timeout: TimeAmount, edge: EdgeRecorder,
        limiter: LogRateLimiter, logger: Logger
    ) {
        edge.record(event)
        limiter.log(
            logger, .info, kind: kind, message,
            metadata: ["peer": "\(channel.remotePeerDescription)", "timeout": "\(timeout.millisecondsText)"])
        close(promise: nil)
    }
}
