import NIOCore
import NIOHTTP1
import UplinkCore
import UplinkRemoteConfig
import UplinkWire

/// One stream's HTTP exchange, as the last handler of its channel (an HTTP/1.1 connection, or an HTTP/2 stream behind
/// `HTTP2FramePayloadToHTTP1ClientCodec`), on the driver's loop: it writes the request head, is the input side of the
/// stream's `BoundStreamPair` (each chunk the pair pushes becomes a body part at once), and reports the response's
/// status, its `resume`/`ack` lines and how the exchange ended to the driver.
///
/// The space signal is the channel's writability: a chunk is written and flushed at once. While the channel stays
/// writable after it, the chunk counts as sent (`BoundStreamPair.sinkSent`) and the pair may push the next: the
/// socket took it, or the channel's own buffer holds it below its high water mark (NIO's default, 64 KiB). Once the
/// channel turns unwritable the pair holds further chunks, and what was handed over counts against the pair, until
/// the channel is writable again. So no write needs a promise, and what waits between the pair and the socket is
/// bounded by the pair's capacity plus that water mark.
///
/// What it learns it hands to `report`, which the driver makes deliver in a later turn of the loop (`handleLater`): the
/// driver's reaction (a write, a closed stream) must not re-enter the channel pipeline from inside one of its
/// callbacks. A remote configuration hint (the `Uplink-Config` header or a `config` line) goes to `relay`.
final class StreamExchangeHandler: ChannelInboundHandler, BoundStreamSink {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart
    typealias ConnectionID = UplinkStateMachine.ConnectionID

    /// How long the text of a refusal's body is waited for.
    static let refusalBodyWait: TimeAmount = .seconds(2)

    let connection: ConnectionID
    private let report: (UplinkEvent) -> Void
    private let relay: (ConfigHint) -> Void
    private let head: HTTPRequestHead
    private let pair: BoundStreamPair
    /// Completed once when the exchange is over: succeeded by the response's end, failed by an error or a closed
    /// channel. The driver waits on it for a clean end at shutdown.
    let ended: EventLoopPromise<Void>
    private var context: ChannelHandlerContext?
    /// On HTTP/1.1: the context of NIO's request encoder, below which the exchange writes the body's chunks framed
    /// by itself (`frameChunks(below:)`). Nil: chunks go through the pipeline as body parts (HTTP/2).
    private var chunkWriter: ChannelHandlerContext?
    private var started = false
    /// The pair was told to hold its chunks until the channel is writable again.
    private var paused = false
    /// Bytes handed to the channel while it was unwritable, counted against the pair until it is writable again.
    private var unsentBytes = 0
    /// The body's end was written, or the exchange is over: nothing more is written.
    private var bodyDone = false
    /// How the exchange ended was reported.
    private var over = false
    private var acknowledgements = LineSplitter(maxLineBytes: 64 * 1024)
    /// A non-200 status whose body is being read for its text, with the bytes so far.
    private var refusal: (status: Int, body: [UInt8])?
    private var refusalTimer: Scheduled<Void>?

    init(
        connection: ConnectionID, head: HTTPRequestHead, pair: BoundStreamPair,
        report: @escaping (UplinkEvent) -> Void, relay: @escaping (ConfigHint) -> Void
    ) {
        self.connection = connection
        self.head = head
        self.pair = pair
        self.report = report
        self.relay = relay
        self.ended = pair.loop.makePromise()
    }

    // MARK: Request

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context)
        context.fireChannelActive()
    }

    /// Has the exchange frame each body chunk of an HTTP/1.1 request itself (`<size in hex>\r\n<bytes>\r\n`, RFC
    /// 9112 §7.1) and write it below `encoder`, the context of the `HTTPRequestEncoder` it sits above. Call before
    /// the exchange is added to the pipeline. Through the encoder a chunk took three writes through two handlers
    /// and a `String` for its size, a large part of a line's cost when each line is a chunk (docs/architecture.md).
    /// The encoder still writes the head and the last chunk, and the response decoder between them still sees the
    /// head (it needs the request's method). Only for a head the encoder frames as chunked: HTTP/1.1 without
    /// `Content-Length`.
    func frameChunks(below encoder: ChannelHandlerContext) {
        guard head.version == .http1_1, !head.headers.contains(name: "content-length") else { return }
        chunkWriter = encoder
    }

    /// Writes the head and lets the pair's chunks in.
    private func start(_ context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
        pair.bind(self)
    }

    func send(_ chunk: ByteBuffer) -> Bool {
        guard let context, !bodyDone else { return false }
        // A failed write closes the channel, which reports why (`errorCaught`, `channelInactive`).
        if let chunkWriter {
            ChunkFraming.write(chunk, below: chunkWriter)
        } else {
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(chunk))), promise: nil)
        }
        unsentBytes += chunk.readableBytes
        guard context.channel.isWritable else {
            paused = true
            return false
        }
        releaseSent()
        return true
    }

    /// The bytes handed to the channel are sent as far as the pair is concerned: they leave its count.
    private func releaseSent() {
        guard unsentBytes > 0 else { return }
        let bytes = unsentBytes
        unsentBytes = 0
        pair.sinkSent(bytes)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if paused && context.channel.isWritable && !bodyDone {
            paused = false
            releaseSent()
            pair.sinkWritable()
        }
        context.fireChannelWritabilityChanged()
    }

    func finish(error: (any Error)?) {
        guard !bodyDone, let context else { return }
        bodyDone = true
        if error == nil {
            // The last chunk (HTTP/1.1) or an empty DATA frame with END_STREAM (HTTP/2); the collector then ends its
            // response.
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            context.close(promise: nil)
        }
    }

    // MARK: Response

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let response):
            let status = Int(response.status.code)
            // 1xx answers (100 Continue, 103 Early Hints) precede the real one; 101 is a protocol switch, refused.
            if (100..<200).contains(status) && status != 101 { return }
            if status == 200 {
                report(.responseHead(connection, status: status, detail: nil))
                if let value = response.headers.first(name: "Uplink-Config"), let hint = ConfigHint(headerValue: value) {
                    report(.configAdvertised(connection))
                    relay(hint)
                }
            } else {
                // A proxy or TLS terminator says why in its body (nginx: "No required SSL certificate was sent").
                refusal = (status, [])
                refusalTimer = context.eventLoop.assumeIsolated().scheduleTask(in: Self.refusalBodyWait) { [self] in
                    reportRefusal()
                }
            }
        case .body(let buffer):
            if var refusal {
                refusal.body.append(contentsOf: buffer.readableBytesView.prefix(RejectionDetail.maximumBytes - refusal.body.count))
                self.refusal = refusal
                if refusal.body.count >= RejectionDetail.maximumBytes { reportRefusal() }
                return
            }
            acknowledgements.append(buffer)
            while let piece = acknowledgements.nextLine() {
                guard case .line(let line) = piece else { continue }
                if let ack = AckLine.parse(line) {
                    report(.ackLine(connection, ack))
                } else if let hint = ConfigHint.parse(line) {
                    relay(hint)
                }
            }
        case .end:
            end(.success(()))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        end(.failure(error))
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        end(.failure(StreamConnectionClosed()))
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        end(.failure(StreamConnectionClosed()))
        self.context = nil
        chunkWriter = nil
    }

    /// The exchange is over: reports how (once), and ends the body for the pair.
    private func end(_ result: Result<Void, any Error>) {
        reportRefusal()
        guard !over else { return }
        over = true
        if !bodyDone {
            bodyDone = true
            if case .failure(let error) = result { pair.finishInput(error: error) }
        }
        switch result {
        case .success:
            ended.succeed()
            report(.streamFailed(connection, .responseEnded))
        case .failure(let error):
            ended.fail(error)
            report(.streamFailed(connection, .transport(StreamConnector.describe(error, connectTimeout: nil))))
        }
    }

    /// The driver gave the stream up, or its connection could not be made: the exchange is over without a report
    /// (the driver knows why).
    func abandon(_ error: any Error) {
        refusalTimer?.cancel()
        refusalTimer = nil
        refusal = nil
        guard !over else { return }
        over = true
        bodyDone = true
        ended.fail(error)
    }

    /// Reports a non-200 head with the text its body held so far (once).
    private func reportRefusal() {
        guard let refusal else { return }
        self.refusal = nil
        refusalTimer?.cancel()
        refusalTimer = nil
        report(.responseHead(connection, status: refusal.status, detail: RejectionDetail.text(of: refusal.body)))
    }
}

/// The stream's connection closed before the collector ended its response.
struct StreamConnectionClosed: Error, CustomStringConvertible {
    var description: String { "the connection closed before the collector ended its response" }
}

/// HTTP/1.1 chunked framing of a request body's bytes, written below NIO's request encoder.
enum ChunkFraming {
    /// A chunk up to this size is copied into one buffer with its size line and CRLF (one write, one iovec); a larger
    /// one goes as three writes without a copy.
    static let copyLimit = 64 << 10

    private static let hexDigits: StaticString = "0123456789abcdef"

    /// Appends `count` in hexadecimal and CRLF: a chunk's size line.
    static func writeSizeLine(_ count: Int, to buffer: inout ByteBuffer) {
        precondition(count > 0)
        var digits = 1
        while count >> (4 * digits) > 0 { digits += 1 }
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: digits + 2) { bytes in
            hexDigits.withUTF8Buffer { hex in
                var rest = count
                for index in stride(from: digits - 1, through: 0, by: -1) {
                    bytes[index] = hex[rest & 0xF]
                    rest >>= 4
                }
            }
            bytes[digits] = UInt8(ascii: "\r")
            bytes[digits + 1] = UInt8(ascii: "\n")
            return digits + 2
        }
    }

    /// Writes `chunk`, framed, to the handler below `encoder` and flushes. An empty chunk writes nothing (its framing
    /// would end the body).
    static func write(_ chunk: ByteBuffer, below encoder: ChannelHandlerContext) {
        let count = chunk.readableBytes
        guard count > 0 else { return }
        if count <= copyLimit {
            var framed = encoder.channel.allocator.buffer(capacity: count + 20)
            writeSizeLine(count, to: &framed)
            framed.writeImmutableBuffer(chunk)
            framed.writeStaticString("\r\n")
            encoder.writeAndFlush(NIOAny(IOData.byteBuffer(framed)), promise: nil)
        } else {
            var sizeLine = encoder.channel.allocator.buffer(capacity: 20)
            writeSizeLine(count, to: &sizeLine)
            encoder.write(NIOAny(IOData.byteBuffer(sizeLine)), promise: nil)
            encoder.write(NIOAny(IOData.byteBuffer(chunk)), promise: nil)
            encoder.writeAndFlush(NIOAny(IOData.byteBuffer(ByteBuffer(staticString: "\r\n"))), promise: nil)
        }
    }
}
