import NIOCore
import NIOHTTP1
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One proxied client connection and (in forwarding mode) its upstream partner.
///
/// Confined to the client channel's event loop; the upstream channel is created on the same loop,
/// so both glue handlers and all of this state are only ever touched from that one thread.
///
/// Data read from one side is queued per direction with a release deadline (now + latency) and
/// written to the other side in order once the deadline has passed and the proxy is not stalled.
/// A side is only asked to `read()` while the opposite side is writable, the direction's queue is
/// short and the proxy is not stalled; with `autoRead` off this propagates TCP backpressure.
final class ProxyConnection {
    enum Side {
        case client
        case upstream

        var other: Side {
            switch self {
            case .client: .upstream
            case .upstream: .client
            }
        }
    }

    /// Something to deliver to the destination side of a direction, in order.
    private enum Item {
        case data(ByteBuffer)
        /// The source half-closed: half-close the destination's output.
        case endOfStream
        /// The source went away entirely: close the destination (orderly).
        case close
    }

    private struct Pending {
        var item: Item
        var releaseAt: NIODeadline
    }

    /// One direction of the relay; named after its *source* side.
    private struct Direction {
        var queue = CircularBuffer<Pending>()
        var queuedBytes = 0
        var timer: Scheduled<Void>?
        /// The source delivered EOF or went away; nothing more will be read from it.
        var sourceFinished = false
    }

    /// Per-side channel state.
    private struct SideState {
        var channel: (any Channel)?
        var context: ChannelHandlerContext?
        var closed = false
        /// Output was shut down by us and we discard input until the peer closes (or the timer fires).
        var draining = false
        var drainTimer: Scheduled<Void>?
    }

    /// Stop reading a source while this many bytes wait to be released towards its destination.
    static let maxQueuedBytes = 256 * 1024
    /// How long an orderly close waits for the peer's FIN before closing anyway.
    static let drainTimeout = TimeAmount.seconds(1)
    /// Upper bound on connecting to upstream.
    static let connectTimeout = TimeAmount.seconds(5)

    let eventLoop: any EventLoop
    private let shared: FaultProxyState
    private let upstreamHost: String
    private let upstreamPort: Int

    private var id = -1
    private var mode = ProxyConnectionMode.forward(cutAfterUpstreamBytes: nil)

    private var client = SideState()
    private var upstream = SideState()
    private var fromClient = Direction()
    private var fromUpstream = Direction()

    private var connecting = false
    /// Set once a fault, a cut or `stop()` took over; nothing is forwarded afterwards.
    private var terminated = false
    private var forwardedToUpstream = 0

    // Respond mode: progress matching "\r\n\r\n" and whether the response went out.
    private var headTerminatorMatched = 0
    private var responded = false

    /// The client's request heads, for `FaultProxy.requestHeads` and response alterations.
    private var requestHeads = HTTPRequestHeadScanner()
    /// The alteration armed by the last request head, applied to what upstream answers.
    private var responseAlteration: ResponseAlterationProgress?
    /// Answering with an endless body (`ProxyResponseAlteration.endlessBody`): upstream's bytes are dropped.
    private var endlessBody = false
    private static let endlessChunk = [UInt8](repeating: UInt8(ascii: "x"), count: 16 * 1024)

    init(shared: FaultProxyState, eventLoop: any EventLoop, clientChannel: any Channel, upstreamHost: String, upstreamPort: Int)
    {
        self.shared = shared
        self.eventLoop = eventLoop
        self.upstreamHost = upstreamHost
        self.upstreamPort = upstreamPort
        self.client.channel = clientChannel
    }

    func configure(id: Int, mode: ProxyConnectionMode) {
        self.id = id
        self.mode = mode
    }

    // MARK: Side access

    private subscript(side: Side) -> SideState {
        get {
            switch side {
            case .client: self.client
            case .upstream: self.upstream
            }
        }
        set {
            switch side {
            case .client: self.client = newValue
            case .upstream: self.upstream = newValue
            }
        }
    }

    private subscript(direction source: Side) -> Direction {
        get {
            switch source {
            case .client: self.fromClient
            case .upstream: self.fromUpstream
            }
        }
        set {
            switch source {
            case .client: self.fromClient = newValue
            case .upstream: self.fromUpstream = newValue
            }
        }
    }

    private func isActive(_ side: Side) -> Bool {
        guard let context = self[side].context, !self[side].closed else { return false }
        return context.channel.isActive
    }

    // MARK: Events from the glue handlers

    func handlerAdded(side: Side, context: ChannelHandlerContext) {
        self[side].context = context
        self[side].channel = context.channel
    }

    func handlerRemoved(side: Side) {
        self[side].context = nil
    }

    func channelActive(side: Side) {
        switch (side, self.mode) {
        case (.client, .respond):
            self.requestRead(.client)
        case (.client, .forward):
            self.connectUpstream()
        case (.upstream, _):
            self.startForwardingIfReady()
        }
    }

    func channelRead(side: Side, buffer: ByteBuffer) {
        if self[side].draining || self.terminated {
            return  // discarded
        }
        switch self.mode {
        case .respond(let status):
            self.scanRequestHead(buffer, status: status)
        case .forward:
            let settings = self.shared.forwardingSettings
            let releaseAt = NIODeadline.now() + settings.latency
            self[direction: side].queue.append(Pending(item: .data(buffer), releaseAt: releaseAt))
            self[direction: side].queuedBytes += buffer.readableBytes
            self.pump(from: side)
        }
    }

    func channelReadComplete(side: Side) {
        self.requestRead(side)
    }

    func inputClosed(side: Side) {
        guard !self[direction: side].sourceFinished else { return }
        self[direction: side].sourceFinished = true
        guard !self.terminated, !self[side].draining else { return }
        switch self.mode {
        case .forward:
            self.enqueue(.endOfStream, from: side)
        case .respond:
            // The client gave up before its request head was complete.
            self.closeGracefully(side)
        }
    }

    func channelInactive(side: Side) {
        self[side].closed = true
        self[side].drainTimer?.cancel()
        self[side].drainTimer = nil
        // Nothing can be delivered to this side any more.
        self.discardQueue(from: side.other)

        if !self[direction: side].sourceFinished {
            self[direction: side].sourceFinished = true
            if case .forward = self.mode, !self.terminated, self[side.other].channel != nil {
                self.enqueue(.close, from: side)
            }
        }
        if side == .client && self.connecting {
            // The upstream connect completes later and closes the new channel right away.
            self.terminated = true
        }
        if self.client.closed && (self.upstream.closed || (self.upstream.channel == nil && !self.connecting)) {
            self.discardQueue(from: .client)
            self.discardQueue(from: .upstream)
        }
    }

    func writabilityChanged(side: Side) {
        if self[side].channel?.isWritable == true {
            self.requestRead(side.other)
            if side == .client { self.writeEndless() }
        }
    }

    /// Writes the endless body's chunks to the client while it can take them (again at each writability change).
    private func writeEndless() {
        guard self.endlessBody, let context = self.client.context, self.isActive(.client), context.channel.isWritable
        else { return }
        for _ in 0..<8 {
            context.write(NIOAny(context.channel.allocator.buffer(bytes: Self.endlessChunk)), promise: nil)
            self.shared.addForwarded(toClient: Self.endlessChunk.count)
        }
        context.flush()
        // Still writable: more on the next loop turn (not in a loop here: the client's reads must get their turn).
        if context.channel.isWritable {
            self.eventLoop.assumeIsolated().execute { self.writeEndless() }
        }
    }

    // MARK: Controls (called on the event loop by FaultProxy)

    /// Re-evaluates stall/latency settings: releases what is due and resumes reading.
    func settingsChanged() {
        self.pump(from: .client)
        self.pump(from: .upstream)
        self.requestRead(.client)
        self.requestRead(.upstream)
    }

    /// Abortive close (SO_LINGER 0 → RST) of both sides.
    func reset() {
        self.terminate()
        for side in [Side.client, .upstream] {
            guard let channel = self[side].channel, !self[side].closed else { continue }
            if let provider = channel as? any SocketOptionProvider {
                // In-loop, so this is applied synchronously before the close below.
                _ = provider.setSoLinger(linger(l_onoff: 1, l_linger: 0))
            }
            channel.close(promise: nil)
        }
    }

    /// Orderly close (FIN) of both sides.
    func cut() {
        self.terminate()
        self.closeGracefully(.client)
        self.closeGracefully(.upstream)
    }

    /// Immediate full close of both sides (used by `stop()`).
    func closeNow() {
        self.terminate()
        for side in [Side.client, .upstream] {
            guard let channel = self[side].channel, !self[side].closed else { continue }
            channel.close(promise: nil)
        }
    }

    private func terminate() {
        self.terminated = true
        self.discardQueue(from: .client)
        self.discardQueue(from: .upstream)
    }

    // MARK: Upstream

    private func connectUpstream() {
        guard !self.terminated, !self.connecting, self.upstream.channel == nil else { return }
        self.connecting = true
        self.shared.upstreamConnectStarted(id: self.id)
        let bound = NIOLoopBound(self, eventLoop: self.eventLoop)
        let shared = self.shared
        let id = self.id
        ClientBootstrap(group: self.eventLoop)
            .channelOption(ChannelOptions.autoRead, value: false)
            .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(Self.connectTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        ProxyGlueHandler(connection: bound.value, side: .upstream)
                    )
                }
            }
            .connect(host: self.upstreamHost, port: self.upstreamPort)
            .assumeIsolated()
            .whenComplete { result in
                self.connecting = false
                switch result {
                case .success(let channel):
                    shared.upstreamConnectFinished(id: id, opened: true)
                    channel.closeFuture.whenComplete { _ in shared.channelClosed(id: id) }
                    self.upstream.channel = channel
                    if self.terminated || self.client.closed {
                        channel.close(promise: nil)
                    } else {
                        self.startForwardingIfReady()
                    }
                case .failure:
                    shared.upstreamConnectFinished(id: id, opened: false)
                    // Upstream is down: let the client see it promptly.
                    self.client.channel?.close(promise: nil)
                }
            }
    }

    private func startForwardingIfReady() {
        guard !self.terminated, self.isActive(.client), self.isActive(.upstream) else { return }
        // NIO may already have read an EOF (or, in theory, data) from the client while the
        // upstream connect was in flight; deliver it now.
        self.pump(from: .client)
        self.pump(from: .upstream)
        self.requestRead(.client)
        self.requestRead(.upstream)
    }

    // MARK: Reading

    /// Asks `side` for more data if everything downstream of it can take it.
    private func requestRead(_ side: Side) {
        guard let context = self[side].context, self.isActive(side), !self[direction: side].sourceFinished else {
            return
        }
        if self[side].draining {
            context.read()
            return
        }
        guard !self.terminated else { return }
        switch self.mode {
        case .respond:
            if !self.responded { context.read() }
        case .forward:
            guard self.isActive(side.other), let destination = self[side.other].channel, destination.isWritable,
                self[direction: side].queuedBytes < Self.maxQueuedBytes,
                !self.shared.forwardingSettings.stalled
            else { return }
            context.read()
        }
    }

    // MARK: Forwarding

    private func enqueue(_ item: Item, from source: Side) {
        let settings = self.shared.forwardingSettings
        self[direction: source].queue.append(Pending(item: item, releaseAt: .now() + settings.latency))
        self.pump(from: source)
    }

    private func discardQueue(from source: Side) {
        self[direction: source].timer?.cancel()
        self[direction: source].timer = nil
        self[direction: source].queue.removeAll()
        self[direction: source].queuedBytes = 0
    }

    /// Delivers every due item of the direction whose source is `source`, in order.
    private func pump(from source: Side) {
        guard !self.terminated, !self[direction: source].queue.isEmpty,
            !self.shared.forwardingSettings.stalled
        else { return }
        let destination = source.other
        guard let context = self[destination].context, self.isActive(destination) else { return }

        let now = NIODeadline.now()
        var wrote = false
        defer {
            if wrote { context.flush() }
        }
        while let head = self[direction: source].queue.first {
            if head.releaseAt > now {
                self.scheduleRelease(from: source, at: head.releaseAt)
                break
            }
            self[direction: source].queue.removeFirst()
            switch head.item {
            case .data(var buffer):
                self[direction: source].queuedBytes -= buffer.readableBytes
                if source == .client {
                    for head in self.requestHeads.consume(buffer) {
                        let verdict = self.shared.recordRequestHead(head, forwarded: true)
                        if verdict.refuse {
                            self.cut()
                            return
                        }
                        if let alteration = verdict.alteration { self.responseAlteration = ResponseAlterationProgress(alteration) }
                    }
                }
                if source == .upstream, self.endlessBody { continue }
                if source == .upstream, self.responseAlteration?.alteration == .endlessBody {
                    self.responseAlteration = nil
                    self.endlessBody = true
                    context.write(NIOAny(context.channel.allocator.buffer(string: "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")), promise: nil)
                    self.writeEndless()
                    continue
                }
                if source == .upstream, var alteration = self.responseAlteration {
                    let (cutAfter, done) = alteration.apply(to: &buffer)
                    self.responseAlteration = done ? nil : alteration
                    if let cutAfter {
                        self.forward(buffer.readSlice(length: cutAfter)!, to: context, from: source)
                        context.flush()
                        wrote = false
                        self.cut()
                        return
                    }
                }
                if source == .client, case .forward(let limit?) = self.mode,
                    buffer.readableBytes >= limit - self.forwardedToUpstream
                {
                    let slice = buffer.readSlice(length: max(0, limit - self.forwardedToUpstream))!
                    self.forward(slice, to: context, from: source)
                    context.flush()
                    wrote = false
                    self.cut()
                    return
                }
                self.forward(buffer, to: context, from: source)
                wrote = true
            case .endOfStream where source == .upstream && self.endlessBody, .close where source == .upstream && self.endlessBody:
                continue  // the endless answer goes on until the client closes
            case .endOfStream:
                if wrote {
                    context.flush()
                    wrote = false
                }
                context.close(mode: .output, promise: nil)
            case .close:
                if wrote {
                    context.flush()
                    wrote = false
                }
                self.closeGracefully(destination)
                return
            }
        }
        self.requestRead(source)
    }

    private func forward(_ buffer: ByteBuffer, to context: ChannelHandlerContext, from source: Side) {
        let count = buffer.readableBytes
        guard count > 0 else { return }
        context.write(NIOAny(buffer), promise: nil)
        switch source {
        case .client:
            self.shared.recordClientBytes(buffer, connection: self.id)
            self.forwardedToUpstream += count
            self.shared.addForwarded(toUpstream: count)
        case .upstream:
            self.shared.addForwarded(toClient: count)
        }
    }

    private func scheduleRelease(from source: Side, at deadline: NIODeadline) {
        guard self[direction: source].timer == nil else { return }
        self[direction: source].timer = self.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) {
            self[direction: source].timer = nil
            self.pump(from: source)
        }
    }

    // MARK: Closing

    /// Half-closes `side`'s output (FIN after everything already written) and discards its input until
    /// the peer closes too, so the kernel never turns the close into an RST because of unread data.
    private func closeGracefully(_ side: Side) {
        guard let channel = self[side].channel, !self[side].closed, !self[side].draining else { return }
        self[side].draining = true
        if let context = self[side].context {
            context.flush()
        }
        channel.close(mode: .output, promise: nil)
        self[side].drainTimer = self.eventLoop.assumeIsolated().scheduleTask(in: Self.drainTimeout) {
            self[side].drainTimer = nil
            channel.close(promise: nil)
        }
        self.requestRead(side)
    }

    // MARK: Respond mode

    private static let headTerminator: [UInt8] = Array("\r\n\r\n".utf8)

    private func scanRequestHead(_ buffer: ByteBuffer, status: Int) {
        guard !self.responded else { return }
        for head in self.requestHeads.consume(buffer) { _ = self.shared.recordRequestHead(head, forwarded: false) }
        let complete = buffer.withUnsafeReadableBytes { bytes -> Bool in
            for byte in bytes {
                if byte == Self.headTerminator[self.headTerminatorMatched] {
                    self.headTerminatorMatched += 1
                    if self.headTerminatorMatched == Self.headTerminator.count { return true }
                } else {
                    self.headTerminatorMatched = byte == Self.headTerminator[0] ? 1 : 0
                }
            }
            return false
        }
        guard complete, let context = self.client.context else { return }
        self.responded = true
        let reason = HTTPResponseStatus(statusCode: status).reasonPhrase
        let head = "HTTP/1.1 \(status) \(reason.isEmpty ? "Unknown" : reason)\r\n"
            + "Content-Length: 0\r\nConnection: close\r\n\r\n"
        context.write(NIOAny(context.channel.allocator.buffer(string: head)), promise: nil)
        self.closeGracefully(.client)
    }
}

/// Connects one side's channel pipeline to its `ProxyConnection`.
final class ProxyGlueHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let connection: ProxyConnection
    private let side: ProxyConnection.Side

    init(connection: ProxyConnection, side: ProxyConnection.Side) {
        self.connection = connection
        self.side = side
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.connection.handlerAdded(side: self.side, context: context)
        if context.channel.isActive {
            self.connection.channelActive(side: self.side)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.connection.handlerRemoved(side: self.side)
    }

    func channelActive(context: ChannelHandlerContext) {
        self.connection.channelActive(side: self.side)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.connection.channelInactive(side: self.side)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.connection.channelRead(side: self.side, buffer: Self.unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.connection.channelReadComplete(side: self.side)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        self.connection.writabilityChanged(side: self.side)
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, case .inputClosed = event {
            self.connection.inputClosed(side: self.side)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Read/write errors (e.g. ECONNRESET) end this side; channelInactive propagates it.
        context.close(promise: nil)
    }
}
