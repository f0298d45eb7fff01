import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import UplinkCore
import UplinkWire

/// The input side of a stream's `BoundStreamPair`: AsyncHTTPClient's streaming body writer, on the pair's loop.
///
/// AsyncHTTPClient calls the body closure once, on the request's loop, when it can send the body. Each chunk the pair
/// pushes goes to the writer at once. The future a write returns is the space signal: already succeeded while the
/// connection is writable, pending while it is not (the pair then holds further chunks until it succeeds). The bytes
/// count against the pair until the delegate's `didSendRequestPart` reports them written (`UplinkExchange`).
final class UplinkBodySink: BoundStreamSink {
    private let writer: HTTPClient.Body.StreamWriter
    private let pair: BoundStreamPair
    /// Ends the body for the client: succeeded by a clean close, failed by a failed stream.
    private let ended: EventLoopPromise<Void>
    /// Inside `send`: a write future already succeeded completes there, and must not re-enter the pair.
    private var sending = false
    private var paused = false
    private var done = false

    private init(writer: HTTPClient.Body.StreamWriter, pair: BoundStreamPair, ended: EventLoopPromise<Void>) {
        self.writer = writer
        self.pair = pair
        self.ended = ended
    }

    /// A streamed body of unknown length (chunked on HTTP/1.1) that `pair` drains into once the client starts it.
    static func body(draining pair: BoundStreamPair) -> HTTPClient.Body {
        let boundPair = NIOLoopBound(pair, eventLoop: pair.loop)
        return .stream(contentLength: nil) { writer in
            let pair = boundPair.value
            let ended = pair.loop.makePromise(of: Void.self)
            pair.bind(UplinkBodySink(writer: writer, pair: pair, ended: ended))
            return ended.futureResult
        }
    }

    func send(_ chunk: ByteBuffer) -> Bool {
        sending = true
        defer { sending = false }
        paused = true
        let sink = NIOLoopBound(self, eventLoop: pair.loop)
        writer.write(.byteBuffer(chunk)).whenComplete { result in
            let sink = sink.value
            switch result {
            case .success:
                sink.paused = false
                if !sink.sending { sink.pair.sinkWritable() }
            case .failure(let error):
                // The request is over (failed or cancelled); its own failure reaches the driver.
                sink.finish(error: error)
                sink.pair.finishInput(error: error)
            }
        }
        return !paused
    }

    func finish(error: (any Error)?) {
        guard !done else { return }
        done = true
        if let error { ended.fail(error) } else { ended.succeed() }
    }
}

/// The response side of one stream, on the stream's loop: the head's status (with the text of a refusal's body), the
/// collector's `resume`/`ack` lines, how the request ended, and the bytes of the body written to the connection.
///
/// What it learns goes to the driver in a later turn of the loop (`handleLater`): the driver's reaction (a write, a
/// closed stream) must not re-enter the HTTP client from inside the client's own callback.
final class UplinkExchange: HTTPClientResponseDelegate {
    typealias Response = Void
    typealias ConnectionID = UplinkStateMachine.ConnectionID

    private let connection: ConnectionID
    private let driver: NIOLoopBound<UplinkDriver>
    private let pair: NIOLoopBound<BoundStreamPair>
    private let connectTimeout: Duration
    private let state: NIOLoopBoundBox<State>

    private struct State {
        var acknowledgements = LineSplitter(maxLineBytes: 64 * 1024)
        /// A non-200 status whose body is being read for its text, with the bytes so far.
        var refusal: (status: Int, body: [UInt8])?
        var refusalTimer: Scheduled<Void>?
    }

    /// How long the text of a refusal's body is waited for.
    static let refusalBodyWait: TimeAmount = .seconds(2)

    init(
        connection: ConnectionID, driver: NIOLoopBound<UplinkDriver>, pair: NIOLoopBound<BoundStreamPair>,
        connectTimeout: Duration
    ) {
        self.connection = connection
        self.driver = driver
        self.pair = pair
        self.connectTimeout = connectTimeout
        self.state = NIOLoopBoundBox(State(), eventLoop: driver.eventLoop)
    }

    private func report(_ event: UplinkEvent) {
        driver.value.handleLater(event)
    }

    func didSendRequestPart(task: HTTPClient.Task<Void>, _ part: IOData) {
        pair.value.sinkSent(part.readableBytes)
    }

    func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let status = Int(head.status.code)
        if status == 200 {
            report(.responseHead(connection, status: status, detail: nil))
            if let value = head.headers.first(name: "Uplink-Config"), let hint = ConfigHint(headerValue: value) {
                report(.configAdvertised(connection))
                driver.value.uplink.remoteConfig?.relay(hint)
            }
        } else {
            // A proxy or TLS terminator says why in its body (nginx: "No required SSL certificate was sent").
            state.value.refusal = (status, [])
            let exchange = NIOLoopBound(self, eventLoop: task.eventLoop)
            state.value.refusalTimer = task.eventLoop.scheduleTask(in: Self.refusalBodyWait) {
                exchange.value.reportRefusal()
            }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        if var refusal = state.value.refusal {
            refusal.body.append(contentsOf: buffer.readableBytesView.prefix(RejectionDetail.maximumBytes - refusal.body.count))
            state.value.refusal = refusal
            if refusal.body.count >= RejectionDetail.maximumBytes { reportRefusal() }
            return task.eventLoop.makeSucceededVoidFuture()
        }
        state.value.acknowledgements.append(buffer)
        while let piece = state.value.acknowledgements.nextLine() {
            guard case .line(let line) = piece else { continue }
            if let ack = AckLine.parse(line) {
                report(.ackLine(connection, ack))
            } else if let hint = ConfigHint.parse(line) {
                driver.value.uplink.remoteConfig?.relay(hint)
            }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
        reportRefusal()
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {
        reportRefusal()
    }

    /// Reports a non-200 head with the text its body held so far (once).
    private func reportRefusal() {
        guard let refusal = state.value.refusal else { return }
        state.value.refusal = nil
        state.value.refusalTimer?.cancel()
        state.value.refusalTimer = nil
        report(.responseHead(connection, status: refusal.status, detail: RejectionDetail.text(of: refusal.body)))
    }

    /// The request's future completed: the response ended, or the exchange failed.
    func requestEnded(_ result: Result<Void, any Error>) {
        reportRefusal()
        switch result {
        case .success:
            report(.streamFailed(connection, .responseEnded))
        case .failure(let error as HTTPClientError) where error == .proxyAuthenticationRequired:
            // The proxy's 407 is as much a configuration problem as a collector's 4xx: back off long, say so.
            report(.responseHead(
                connection, status: 407,
                detail: "the HTTP proxy requires credentials: give them as http://user:password@host:port in uplink.proxy or HTTPS_PROXY"))
        case .failure(let error):
            report(.streamFailed(connection, .transport(UplinkDriver.describe(error, connectTimeout: connectTimeout))))
        }
    }
}
