import HummingbirdCore
import NIOCore
import NIOHTTPTypes

/// What takes a stream request's body on its channel's loop (`StreamBodyTap`).
protocol StreamBodyReceiver: AnyObject {
    /// One part of the body. Returns whether the tap may read on now; after false it waits for `resumeReading()`.
    func receive(_ part: ByteBuffer) -> Bool
    /// The body ended (the request's end).
    func bodyEnded()
    /// The body can never end: the connection closed, or reading failed.
    func bodyFailed(_ error: any Error)
}

/// Takes the body of a `POST /v1/stream` request out of the request pipeline on the channel's loop and hands its
/// parts straight to the stream (`StreamBodyReceiver`), so that a part costs no hand-off through Hummingbird's
/// asynchronous request body (a locked buffer, a task resumed per part). Hummingbird still sees the request's head
/// and end, routes it and writes the response; the body it sees is empty. Every other request passes untouched.
///
/// Parts that arrive before the stream attaches its receiver (it does once it has checked the request and taken over
/// the agent) wait here; past `holdLimit` bytes of them, or while the receiver says so, reading pauses. A request
/// answered without a receiver (a refusal) has its body dropped. Sits after `RequestDeadlineHandler`, which thus
/// still sees every part, and sees reading paused as the back-pressure it is.
final class StreamBodyTap: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        /// Not a stream request's body: parts go on.
        case passing
        /// A stream request's body, before its receiver: the parts so far, whether the request ended, and why it
        /// never will (the connection closed or reading failed).
        case holding(parts: CircularBuffer<ByteBuffer>, bytes: Int, ended: Bool, failure: (any Error)?)
        /// The receiver takes the parts.
        case receiving(any StreamBodyReceiver)
        /// A stream request answered without a receiver, or whose receiver is done: parts are dropped.
        case discarding
    }

    private let holdLimit: Int
    private var state = State.passing
    private var context: ChannelHandlerContext?
    /// A `read()` not passed on while reading is paused.
    private var readHeld = false
    /// The receiver asked to pause.
    private var receiverFull = false

    /// How many bytes of a stream request's body are kept before its receiver attaches, by default: 256 KiB. An
    /// agent sends nothing before the stream's `resume` line, written just before the receiver attaches, so little
    /// waits here; it is kept per connection, so a peer that does not wait finds reading paused soon.
    static let defaultHoldLimit = 256 << 10

    /// `holdLimit`: bytes of body parts kept before a receiver attaches.
    init(holdLimit: Int) {
        self.holdLimit = holdLimit
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        switch (part, state) {
        case (.head(let head), _):
            let isStream = head.method == .post && Self.isStreamPath(head.path)
            state = isStream ? .holding(parts: [], bytes: 0, ended: false, failure: nil) : .passing
            receiverFull = false
            context.fireChannelRead(data)
        case (.body, .passing), (.end, .passing):
            context.fireChannelRead(data)
        case (.body(let bytes), .holding(var parts, let held, let ended, let failure)):
            state = .discarding  // no copy of `parts` while it is changed
            parts.append(bytes)
            state = .holding(parts: parts, bytes: held + bytes.readableBytes, ended: ended, failure: failure)
        case (.body(let bytes), .receiving(let receiver)):
            if !receiver.receive(bytes) { receiverFull = true }
        case (.body, .discarding):
            break
        case (.end, .holding(let parts, let held, _, let failure)):
            state = .holding(parts: parts, bytes: held, ended: true, failure: failure)
            context.fireChannelRead(data)
        case (.end, .receiving(let receiver)):
            state = .discarding
            receiver.bodyEnded()
            context.fireChannelRead(data)
        case (.end, .discarding):
            context.fireChannelRead(data)
        }
    }

    func read(context: ChannelHandlerContext) {
        if isPaused {
            readHeld = true
        } else {
            context.read()
        }
    }

    /// Reading waits: for the receiver, or for room below `holdLimit`.
    private var isPaused: Bool {
        switch state {
        case .holding(_, let bytes, _, _): bytes >= holdLimit
        case .receiving: receiverFull
        case .passing, .discarding: false
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // The response ends while the body waits for a receiver that will not come (a refusal, or a stream that
        // dropped its request): what waits is of no use.
        if case .end = unwrapOutboundIn(data), case .holding(_, _, _, _) = state {
            state = .discarding
            resumeIfHeld()
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    /// The peer's input ended (a FIN, which Hummingbird's half-closure lets through as an event, the channel still
    /// open for the response): a body not ended by then never will be.
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { fail(ChannelError.inputClosed) }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail(error)
        context.fireErrorCaught(error)
    }

    /// The body can never end.
    private func fail(_ error: any Error) {
        switch state {
        case .holding(let parts, let bytes, let ended, nil) where !ended:
            state = .holding(parts: parts, bytes: bytes, ended: ended, failure: error)
        case .receiving(let receiver):
            state = .discarding
            receiver.bodyFailed(error)
        case .holding, .passing, .discarding:
            break
        }
    }

    /// Whether the stream request on `channel` is abandoned: the channel closed, or the body can never end (the
    /// input ended or reading failed before the request's end). A request's head and its connection's end can be read
    /// in one go (a proxy gave up on the request before a busy collector read it); the request is still handed to the
    /// responder, which must then not act for its agent. A request whose body is complete (an HTTP/2 `END_STREAM`, a
    /// last chunk) is not abandoned, whatever follows.
    static func isAbandoned(_ channel: any Channel) async -> Bool {
        @Sendable func look() -> Bool {
            guard channel.isActive, let tap = try? channel.pipeline.syncOperations.handler(type: StreamBodyTap.self)
            else { return true }
            if case .holding(_, _, false, .some) = tap.state { return true }
            return false
        }
        // A stream's task runs on its channel's loop (see `Collector.openStream`): then no hop is needed.
        if channel.eventLoop.inEventLoop { return look() }
        return (try? await channel.eventLoop.submit(look).get()) ?? true
    }

    /// Attaches the receiver of this request's body (on the channel's loop): it gets what waited, in order, then
    /// every further part. False when the request on this pipeline is no stream request that waits for one.
    func attach(_ receiver: any StreamBodyReceiver) -> Bool {
        guard case .holding(var parts, _, let ended, let failure) = state else { return false }
        state = .receiving(receiver)
        receiverFull = false
        // The receiver may detach while it takes a part (its stream stopped): then the rest is dropped.
        while isReceiving, let part = parts.popFirst() {
            if !receiver.receive(part) { receiverFull = true }
        }
        if isReceiving, ended {
            state = .discarding
            receiver.bodyEnded()
        } else if isReceiving, let failure {
            state = .discarding
            receiver.bodyFailed(failure)
        }
        resumeIfHeld()
        return true
    }

    private var isReceiving: Bool {
        if case .receiving = state { return true }
        return false
    }

    /// The receiver can take more (on the channel's loop).
    func resumeReading() {
        receiverFull = false
        resumeIfHeld()
    }

    /// The receiver is done before the body ended (its stream stopped): further parts are dropped.
    func detach() {
        if case .receiving = state { state = .discarding }
        resumeReading()
    }

    private func resumeIfHeld() {
        guard readHeld, !isPaused, let context else { return }
        readHeld = false
        context.read()
    }

    /// Whether `target` (the request target) is the path the router serves streams on: read as the router reads it
    /// (Hummingbird's `URI`, without the query; empty components do not count).
    static func isStreamPath(_ target: String?) -> Bool {
        guard let target else { return false }
        return URI(target).path.split(separator: "/", omittingEmptySubsequences: true).elementsEqual(streamPathComponents)
    }

    /// `v1`, `stream`: the components of `Collector`'s stream route.
    static let streamPathComponents: [Substring] = ["v1", "stream"]
}
