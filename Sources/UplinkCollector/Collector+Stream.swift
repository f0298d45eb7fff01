import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import UplinkCore
import UplinkWire

extension HTTPField.Name {
    static let uplinkAgent = HTTPField.Name("Uplink-Agent")!
    static let uplinkEpoch = HTTPField.Name("Uplink-Epoch")!
    static let uplinkWindow = HTTPField.Name("Uplink-Window")!
    static let uplinkProtocol = HTTPField.Name("Uplink-Protocol")!
}

/// How one stream's receiving side ended.
enum StreamEnding: Sendable {
    /// The agent ended the request (its final empty chunk).
    case bodyEnded
    /// The collector ended it: a newer connection of the agent, or shutdown.
    case stopped
    /// The connection broke or storing failed.
    case failed(any Error)
}

/// What the receiving side tells the response side.
enum StreamEvent: Sendable {
    /// Records were stored: write the newest acknowledgement (see `PendingAck`).
    case ack
    /// The time a held-back acknowledgement waited for has come.
    case ackDue
    /// Heartbeat lines arrived: answer with one (see `HeartbeatAnswer`).
    case heartbeat
    /// The agent's remote configuration changed: write a `config` line (see `PendingConfigHint`).
    case config
    case stop
}

/// The newest acknowledgement the response side has not written yet. Acks that arrive while one waits merge into it
/// (acks are cumulative), so the response side writes one ack for all the batches stored since it last wrote, and a
/// peer that does not read its response cannot make the collector queue an ack per stored batch.
///
/// It also paces them: after an ack is written the next one waits until `interval` has passed, unless `urgentBytes`
/// of record lines were stored since (docs/protocol.md, "Response"). At a steady trickle each stored line
/// would otherwise cost an ack on both ends (a write here, a wake-up and a read on the agent); a bulk stream stores
/// large batches, each urgent, so its acks are not held back and the agent's window of unacknowledged bytes keeps
/// moving. An agent that says how much it can hold unacknowledged (`Uplink-Window`) gets its ack once a quarter of
/// that is stored, so a small ring never fills (and drops) while an ack is held back.
final class PendingAck: Sendable {
    /// Shortest time between two acks of a stream, unless one is urgent, by default
    /// (`CollectorConfiguration.ackInterval`).
    static let interval = Duration.milliseconds(250)
    /// Bytes of stored record lines after which an ack is written at once, for an agent that sent no window.
    static let defaultUrgentBytes = 128 << 10

    /// The urgent size for an agent that holds at most `window` bytes unacknowledged: a quarter of it, at most
    /// `defaultUrgentBytes`.
    static func urgentBytes(window: UInt64?) -> Int {
        guard let window else { return defaultUrgentBytes }
        return Int(max(1, min(UInt64(defaultUrgentBytes), window / 4)))
    }

    /// Bytes of stored record lines after which this stream's ack is written at once.
    let urgentBytes: Int
    /// Shortest time between two of this stream's acks, unless one is urgent.
    let interval: Duration

    init(urgentBytes: Int = PendingAck.defaultUrgentBytes, interval: Duration = PendingAck.interval) {
        self.urgentBytes = urgentBytes
        self.interval = interval
    }

    private struct State {
        var sequence: UInt64?
        var bytes = 0
        var lastWritten: ContinuousClock.Instant?
    }
    private let state = Mutex(State())

    /// Called by the receiving side after storing `bytes` of lines through `value`: whether the response side must
    /// be woken (no ack was waiting, or the waiting one just became urgent).
    func offer(_ value: UInt64, bytes: Int) -> Bool {
        state.withLock { state in
            let wasWaiting = state.sequence != nil
            let wasUrgent = state.bytes >= urgentBytes
            state.sequence = max(state.sequence ?? 0, value)
            state.bytes += bytes
            return !wasWaiting || (!wasUrgent && state.bytes >= urgentBytes)
        }
    }

    /// Called by the response side: how long to wait before taking the ack, or nil when it may be taken now.
    func delay(now: ContinuousClock.Instant = .now) -> Duration? {
        state.withLock { state in
            guard state.sequence != nil, state.bytes < urgentBytes, let last = state.lastWritten else { return nil }
            let due = last + interval
            return due > now ? due - now : nil
        }
    }

    /// Called by the response side: the acknowledgement to write now, if one waits.
    func take(now: ContinuousClock.Instant = .now) -> UInt64? {
        state.withLock { state in
            guard let sequence = state.sequence else { return nil }
            state.sequence = nil
            state.bytes = 0
            state.lastWritten = now
            return sequence
        }
    }
}

/// Makes sure at most one heartbeat answer waits to be written, however fast heartbeat lines arrive: a peer that
/// sends them without reading the response cannot make the collector buffer answers.
final class HeartbeatAnswer: Sendable {
    private let pending = Atomic(false)

    /// Called by the receiving side: whether an answer must be asked for (none is waiting yet).
    func request() -> Bool { !pending.exchange(true, ordering: .acquiringAndReleasing) }

    /// Called by the response side before it writes the answer.
    func taken() { pending.store(false, ordering: .releasing) }
}

/// The newest `config` line the response side has not written yet: hints that arrive while one waits replace it
/// (only the newest revision matters), so a peer that does not read its response cannot make the collector queue a
/// line per reload.
final class PendingConfigHint: Sendable {
    private let hint = Mutex<ConfigHint?>(nil)

    /// Called when the agent's revision changed: whether the response side must be woken (none was waiting).
    func offer(_ new: ConfigHint) -> Bool {
        hint.withLock { hint in
            defer { hint = new }
            return hint == nil
        }
    }

    /// Called by the response side: the hint to write now, if one waits.
    func take() -> ConfigHint? {
        hint.withLock { hint in
            defer { hint = nil }
            return hint
        }
    }
}

extension Collector {
    /// `POST /v1/stream`: checks the headers, the stream limit and the agent's identity, then answers `200` with a
    /// body that runs the stream.
    func openStream(_ request: Request, context: CollectorRequestContext, storage: Storage) async -> Response {
        let http2 = StreamConnection.isHTTP2(context.channel)
        if let token = configuration.token {
            guard let authorization = request.headers[.authorization], Self.isBearer(authorization, token: token) else {
                return reject(
                    http2: http2, .unauthorized, "missing or wrong bearer token", extraHeaders: [.wwwAuthenticate: "Bearer"])
            }
        }
        if let version = request.headers[.uplinkProtocol], !StreamHeaders.isSupportedProtocol(version.utf8) {
            return reject(http2: http2, .unsupportedMediaType, "unsupported Uplink-Protocol \(version); this collector speaks version 1")
        }
        var encoding = WireCompression.none
        if let header = request.headers[.contentEncoding] {
            // 415 for a coding this collector lacks or has disabled (collector.accept_encodings); the agent then
            // falls back to an uncompressed body (docs/protocol.md, "Compression").
            guard let parsed = WireCompression(contentEncoding: header),
                parsed == .none || configuration.acceptEncodings.contains(parsed)
            else {
                let accepted = configuration.acceptEncodingsHeader
                return reject(
                    http2: http2, .unsupportedMediaType,
                    "unsupported Content-Encoding \(header); this collector accepts \(accepted)",
                    extraHeaders: [.acceptEncoding: accepted])
            }
            encoding = parsed
        }
        guard let agentHeader = request.headers[.uplinkAgent], let agent = AgentID.validated(agentHeader.utf8) else {
            return reject(
                http2: http2, .badRequest, "missing or invalid Uplink-Agent header: 1-128 bytes of [A-Za-z0-9._:-]")
        }
        guard let epochHeader = request.headers[.uplinkEpoch], let epoch = StreamHeaders.epoch(epochHeader.utf8) else {
            return reject(http2: http2, .badRequest, "missing or invalid Uplink-Epoch header: a decimal integer from 1 to 2^63-1")
        }
        guard !registry.isShuttingDown else {
            return reject(http2: http2, .serviceUnavailable, "the collector is shutting down")
        }
        let connection = await StreamConnection.inspect(context.channel, tls: configuration.tls != nil)
        if let refusal = refusedIdentity(agent: agent, connection, refusing: "a stream") {
            return reject(http2: http2, .forbidden, refusal)
        }
        guard let slot = registry.takeSlot(agent: agent, limit: configuration.maxStreams) else {
            edge.recorder.record(.streamOverLimit)
            edge.limiter.log(
                logger, .warning, kind: "stream-limit", "Refused a stream: the stream limit is reached",
                metadata: ["agent": "\(agent)", "limit": "\(configuration.maxStreams)"])
            return reject(
                http2: http2, .serviceUnavailable,
                "too many streams: this collector serves at most \(configuration.maxStreams) at once; retry later",
                extraHeaders: [.retryAfter: "5"])
        }
        if connection.isHTTP2 { edge.recorder.record(.http2Stream) }
        if connection.isTLS { edge.recorder.record(.tlsStream) }
        let stream = StreamKey(agent: agent, epoch: epoch)
        let control = StreamControl(
            channel: context.channel,
            description: OpenStream(
                agent: agent, epoch: epoch, httpVersion: connection.isHTTP2 ? "HTTP/2" : "HTTP/1.1", tls: connection.isTLS,
                tlsVersion: connection.tlsVersion, certificateSubject: connection.certificateSubject, peer: connection.peer))
        let logger = context.logger
        let bodyEncoding = encoding
        var headers: HTTPFields = [.contentType: "application/x-ndjson", .cacheControl: "no-store"]
        var presented: PresentedLabels?
        if let remote = remoteConfig {
            // The header tells the agent that this collector serves remote configuration, and its revision; a
            // malformed Uplink-Labels, or one over its limits, does not cost the stream (the labels are then left
            // out). They are kept only where rules may match them (`labels_from: [agent]`).
            var labels = PresentedLabels()
            if remote.settings.labelsFrom.contains(.agent), let header = request.headers[.uplinkLabels],
                case .success(let reported) = Self.labels(header)
            {
                labels.reported = reported
            }
            if remote.settings.labelsFrom.contains(.certificate), let certificate = connection.certificate {
                labels.certificate = Self.certificateLabels(certificate)
            }
            presented = labels
            headers[.uplinkConfig] = remote.hint(agent: agent, labels: labels).headerValue
        }
        let remoteLabels = presented
        // A malformed or missing window leaves the default: the header only makes acks come sooner.
        let ackUrgentBytes = PendingAck.urgentBytes(
            window: request.headers[.uplinkWindow].flatMap { StreamHeaders.window($0.utf8) })
        return Response(
            status: .ok,
            headers: headers,
            body: ResponseBody { writer in
                defer { slot.release() }
                // The stream's tasks run on its connection's loop, where its body is read and stored (`StreamBodyTap`,
                // `StreamReceiver`): an ack the receiver offers wakes no other thread. A batch the loop cannot store
                // itself costs one hand-off to the storage thread and one back.
                await withTaskExecutorPreference(EventLoopTaskExecutor(loop: control.channel.eventLoop)) {
                    await self.serveStream(
                        stream, control: control, encoding: bodyEncoding, remoteLabels: remoteLabels,
                        ackUrgentBytes: ackUrgentBytes, writer: &writer, storage: storage, logger: logger)
                }
            }
        )
    }

    /// With `agent_identity: certificate`, why `connection` may not speak for `agent` (`identityRefusal`), counted
    /// and logged (rate-limited) as "Refused <request>: <reason>"; nil when it may, or with the header's identity.
    func refusedIdentity(agent: String, _ connection: StreamConnection, refusing request: String) -> String? {
        guard configuration.tls?.agentIdentity == .certificate, let refusal = identityRefusal(agent: agent, connection) else {
            return nil
        }
        edge.recorder.record(.identityRefused)
        edge.limiter.log(
            logger, .warning, kind: "identity", "Refused \(request): \(refusal)",
            metadata: ["agent": "\(agent)", "peer": "\(connection.peer)"])
        return refusal
    }

    /// Why `agent` may not speak on `connection` under `agent_identity: certificate`, or nil when it may.
    private func identityRefusal(agent: String, _ connection: StreamConnection) -> String? {
        guard let certificate = connection.certificate else {
            return "agent_identity is certificate, and the connection presented no client certificate"
        }
        let names = CollectorTLS.identities(of: certificate)
        guard names.contains(agent) else {
            let listed = names.isEmpty ? "none" : names.joined(separator: ", ")
            return "Uplink-Agent '\(agent)' is not a name of the client certificate (its CN and DNS names: \(listed))"
        }
        return nil
    }

    /// A refusal with its reason as the body. Over HTTP/1.1 the connection is closed after it (its request body may
    /// never end); an HTTP/2 response must not carry `Connection`, and the stream ends on its own.
    private func reject(
        http2: Bool, _ status: HTTPResponse.Status, _ reason: String, extraHeaders: HTTPFields = [:]
    ) -> Response {
        recorder.streamRejected()
        logger.debug("Refused a stream", metadata: ["status": "\(status.code)", "reason": "\(reason)"])
        var headers: HTTPFields = [.contentType: "text/plain; charset=utf-8"]
        if !http2 { headers[.connection] = "close" }
        headers.append(contentsOf: extraHeaders)
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: reason + "\n")))
    }

    /// Compares in time independent of where the first difference is.
    static func isBearer(_ authorization: String, token: String) -> Bool {
        StreamHeaders.isBearer(authorization.utf8, token: token.utf8)
    }

    /// Runs one stream inside its response body: takes over the agent, sends `resume`, then acknowledges what the
    /// receiving side (the stream's `StreamReceiver`, which a child task waits for) stores, until the request ends,
    /// the stream is stopped, or the connection breaks.
    func serveStream(
        _ stream: StreamKey, control: StreamControl, encoding: WireCompression,
        remoteLabels: PresentedLabels? = nil, ackUrgentBytes: Int = PendingAck.defaultUrgentBytes,
        writer: inout any ResponseBodyWriter, storage: Storage, logger: Logger
    ) async {
        var logger = logger
        logger[metadataKey: "agent"] = "\(stream.agent)"
        logger[metadataKey: "epoch"] = "\(stream.epoch)"
        // An abandoned request must not take the agent from its live stream: a proxy that gave up on it (nginx's 408
        // to an agent that waited too long for `resume`) while this collector was too busy to read it leaves its head
        // and the connection's end queued together, and the agent has opened a newer stream since, which a late
        // claim would cut off.
        guard await !StreamBodyTap.isAbandoned(control.channel) else {
            recorder.streamRejected()
            logger.debug("Dropped a stream request whose connection ended before the stream could start")
            try? await writer.finish(nil)
            return
        }
        let predecessor = registry.claim(agent: stream.agent, control: control)
        recorder.streamOpened(replacing: predecessor != nil)
        fleetTable.opened(control.description, wall: WallClock.nowNanoseconds())
        if let predecessor {
            logger.info("A new connection of the agent replaces its older one")
            predecessor.requestStop(closingConnection: true)
            await predecessor.waitUntilReleased()
        }
        if encoding != .none { logger[metadataKey: "encoding"] = "\(encoding)" }
        let ending = await exchange(
            stream, control: control, encoding: encoding, remoteLabels: remoteLabels,
            ackUrgentBytes: ackUrgentBytes, writer: &writer, storage: storage, logger: logger)
        // Let go of the agent before the response ends, so that whoever sees the end sees the stream closed.
        registry.release(agent: stream.agent, control: control)
        control.markReleased()
        recorder.streamClosed()
        fleetTable.closed(agent: stream.agent, wall: WallClock.nowNanoseconds())
        switch ending {
        case .bodyEnded:
            logger.debug("Stream ended by the agent")
            do {
                try await writer.finish(nil)
            } catch {
                control.channel.close(promise: nil)
            }
        case .stopped:
            logger.debug("Stream ended by the collector")
            try? await writer.finish(nil)
            // The request body never ends on its own: close the connection rather than drain it.
            control.channel.close(promise: nil)
        case .failed(let error as WireCompressionError):
            // The agent's body could not be decoded: say why in the response (agents ignore lines they do not
            // know) and in the log, then end the stream; other streams go on.
            edge.limiter.log(
                logger, .warning, kind: "decompression",
                "Ended a stream whose compressed body was refused: \(error.message)",
                metadata: ["code": "\(error.code.rawValue)"])
            try? await writer.write(Self.errorBuffer(error))
            try? await writer.finish(nil)
            control.channel.close(promise: nil)
        case .failed(let error):
            logger.debug("Stream broke", metadata: ["error": "\(error)"])
            try? await writer.finish(nil)
            control.channel.close(promise: nil)
        }
    }

    /// Sends `resume` (and, with remote configuration, the `config` line), then acknowledges what the receiving
    /// side stores until the stream ends; a `config` line follows whenever the agent's revision changes.
    private func exchange(
        _ stream: StreamKey, control: StreamControl, encoding: WireCompression,
        remoteLabels: PresentedLabels?, ackUrgentBytes: Int, writer: inout any ResponseBodyWriter, storage: Storage,
        logger: Logger
    ) async -> StreamEnding {
        let mark = marks.mark(for: stream)
        logger.debug("Stream opened", metadata: ["resume": "\(mark)"])
        let (events, eventSink) = AsyncStream.makeStream(of: StreamEvent.self)
        let pendingHint = PendingConfigHint()
        var subscription: (service: RemoteConfigService, id: UInt64)?
        defer { if let subscription { subscription.service.unsubscribe(subscription.id) } }
        do {
            try await writer.write(Self.ackBuffer(.resume(mark)))
            if let remote = remoteConfig, let remoteLabels {
                let (id, hint) = remote.subscribe(agent: stream.agent, labels: remoteLabels) { hint in
                    if pendingHint.offer(hint) { eventSink.yield(.config) }
                }
                subscription = (remote, id)
                try await writer.write(Self.configBuffer(hint))
            }
        } catch {
            return .failed(error)
        }

        control.onStop { eventSink.yield(.stop) }
        let heartbeat = HeartbeatAnswer()
        let pendingAck = PendingAck(urgentBytes: ackUrgentBytes, interval: configuration.ackInterval)
        return await withTaskGroup(of: StreamEnding.self) { group in
            group.addTask {
                defer { eventSink.finish() }
                return await self.receive(
                    stream, mark: mark, encoding: encoding, control: control, storage: storage,
                    remoteLabels: remoteLabels, events: eventSink, pendingAck: pendingAck, heartbeat: heartbeat,
                    logger: logger)
            }
            var writeFailure: (any Error)?
            // A held-back ack is due later: a timer on the stream's loop asks for it again then, while heartbeats,
            // hints and a stop are answered meanwhile.
            var ackTimer: Scheduled<Void>?
            defer { ackTimer?.cancel() }
            loop: for await event in events {
                switch event {
                case .ack, .ackDue:
                    if case .ackDue = event { ackTimer = nil }
                    // Held back at most `ackInterval`; stored lines meanwhile join this ack.
                    if let delay = pendingAck.delay() {
                        if ackTimer == nil {
                            ackTimer = control.channel.eventLoop.scheduleTask(in: .nanoseconds(delay.nanoseconds)) {
                                eventSink.yield(.ackDue)
                            }
                        }
                        continue
                    }
                    ackTimer?.cancel()
                    ackTimer = nil
                    guard let sequence = pendingAck.take() else { continue }
                    do {
                        try await writer.write(Self.ackBuffer(.ack(sequence)))
                    } catch {
                        writeFailure = error
                        break loop
                    }
                case .heartbeat:
                    heartbeat.taken()
                    do {
                        try await writer.write(Self.heartbeatBuffer())
                    } catch {
                        writeFailure = error
                        break loop
                    }
                case .config:
                    guard let hint = pendingHint.take() else { continue }
                    do {
                        try await writer.write(Self.configBuffer(hint))
                    } catch {
                        writeFailure = error
                        break loop
                    }
                case .stop:
                    break loop
                }
            }
            // Stops the receiving side between batches (a batch being stored completes first).
            group.cancelAll()
            let ending = await group.next() ?? .stopped
            if let writeFailure { return .failed(writeFailure) }
            // What was stored since the last ack is acknowledged before the response ends, even when the ack was
            // still held back: a sender that ended its body waits for it. A stream that is ending anyway (stopped,
            // or its connection gone) ends as it would have if this write fails.
            if let sequence = pendingAck.take() {
                try? await writer.write(Self.ackBuffer(.ack(sequence)))
            }
            return ending
        }
    }

    /// `{"heartbeat":<the collector's wall clock, ns since the Unix epoch>}` and its newline.
    static func heartbeatBuffer() -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: 36)
        _ = WireLineWriter.appendHeartbeat(timestamp: WallClock.nowNanoseconds(), to: &buffer)
        return buffer
    }

    /// `{"error":"<code>","message":"<text>"}` and its newline: why the collector ends a stream (docs/protocol.md).
    static func errorBuffer(_ error: WireCompressionError) -> ByteBuffer {
        var line = Array(#"{"error":"#.utf8)
        WireLineWriter.appendJSONString(error.code.rawValue, to: &line)
        line.append(contentsOf: #","message":"#.utf8)
        WireLineWriter.appendJSONString(error.message, to: &line)
        line.append(contentsOf: "}\n".utf8)
        return ByteBuffer(bytes: line)
    }

    /// `{"config":{"rev":"sha256:<hex>","generation":N}}` and its newline.
    static func configBuffer(_ hint: ConfigHint) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: 112)
        WireLineWriter.appendConfigLine(hint, to: &buffer)
        return buffer
    }

    static func ackBuffer(_ line: AckLine) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: 32)
        WireLineWriter.appendAckLine(line, to: &buffer)
        return buffer
    }

    /// The receiving side: a `StreamReceiver` on the stream's loop takes the request body from the pipeline's
    /// `StreamBodyTap` as the channel reads it and stores its batches; this waits until it ends. Cancelling the
    /// task stops it at the next batch boundary.
    private func receive(
        _ stream: StreamKey, mark: UInt64, encoding: WireCompression, control: StreamControl, storage: Storage,
        remoteLabels: PresentedLabels?, events: AsyncStream<StreamEvent>.Continuation, pendingAck: PendingAck,
        heartbeat: HeartbeatAnswer, logger: Logger
    ) async -> StreamEnding {
        let loop = control.channel.eventLoop
        let slot = NIOLoopBoundBox.makeBoxSendingValue(ReceiverSlot(), as: ReceiverSlot.self, eventLoop: loop)
        let processor = StreamProcessor(
            stream: stream, mark: mark, originMarks: marks.originMarks(agent: stream.agent),
            maxLineBytes: configuration.maxLineBytes)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<StreamEnding, Never>) in
                loop.execute {
                    guard !slot.value.cancelled else { return continuation.resume(returning: .stopped) }
                    do {
                        let tap = try control.channel.pipeline.syncOperations.handler(type: StreamBodyTap.self)
                        let receiver = try StreamReceiver(
                            loop: loop, tap: tap, processor: processor, encoding: encoding,
                            waitingLimit: Self.maximumWaitingBatchBytes,
                            store: { batch, completion in
                                self.store(
                                    batch, of: stream, storage: storage, remoteLabels: remoteLabels, events: events,
                                    pendingAck: pendingAck, logger: logger, completion: completion)
                            },
                            heartbeat: { if heartbeat.request() { events.yield(.heartbeat) } },
                            decodingFailed: { self.recorder.decompressionFailed($0) },
                            isStopRequested: { control.isStopRequested },
                            finished: { continuation.resume(returning: $0) })
                        slot.value.receiver = receiver
                        if !tap.attach(receiver) {
                            receiver.bodyFailed(
                                CollectorError(code: "no_body", message: "the stream request's body was not kept for it"))
                        }
                    } catch {
                        continuation.resume(returning: .failed(error))
                    }
                }
            }
        } onCancel: {
            loop.execute {
                slot.value.cancelled = true
                slot.value.receiver?.stop()
            }
        }
    }

    /// How many bytes of received lines may wait while the previous batch is being stored; reading pauses above.
    static let maximumWaitingBatchBytes = 4 << 20

    /// Stores one received batch (its records, its rejects, its configuration statuses) and offers its ack; calls
    /// `completion` once done, on the calling thread when nothing had to wait.
    private func store(
        _ batch: ReceivedBatch, of stream: StreamKey, storage: Storage, remoteLabels: PresentedLabels?,
        events: AsyncStream<StreamEvent>.Continuation, pendingAck: PendingAck, logger: Logger,
        completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        recorder.received(batch)
        if !batch.configStatuses.isEmpty, let remote = remoteConfig {
            // One record for the batch, with the labels the stream presented: the last status is the agent's
            // report, and the last failure before it still counts towards a halt. Recorded before the batch's
            // records are acknowledged.
            let statuses = batch.configStatuses
            var rest = batch
            rest.configStatuses = []
            Task {
                await remote.record(
                    batch: statuses, agent: stream.agent, labels: remoteLabels ?? PresentedLabels(),
                    wall: WallClock.nowNanoseconds())
                self.storeRecords(
                    rest, of: stream, storage: storage, events: events, pendingAck: pendingAck, logger: logger,
                    completion: completion)
            }
            return
        }
        storeRecords(
            batch, of: stream, storage: storage, events: events, pendingAck: pendingAck, logger: logger,
            completion: completion)
    }

    private func storeRecords(
        _ batch: ReceivedBatch, of stream: StreamKey, storage: Storage, events: AsyncStream<StreamEvent>.Continuation,
        pendingAck: PendingAck, logger: Logger, completion: @escaping @Sendable (Result<Void, any Error>) -> Void
    ) {
        // The fleet table learns of the batch before its ack is offered: whoever sees the ack sees the counts.
        let activity = FleetBatch(batch)
        for gap in batch.gaps {
            logger.warning(
                "Records missing: the agent dropped records",
                metadata: ["after": "\(gap.after)", "next": "\(gap.next)", "missing": "\(gap.missing)"])
        }
        guard batch.needsStorage else {
            noteActivity(activity, of: stream)
            return completion(.success(()))
        }
        let newestRecordTime = batch.newestRecordTime
        let records =
            batch.raisesMark
            ? CollectorBatch(
                stream: stream, lines: batch.lines, highestSequence: batch.highestSequence, origins: batch.origins)
            : nil
        storage.commit(Storage.Commit(batch: records, rejects: batch.rejects)) { result in
            var activity = activity
            if case .success = result, let records {
                self.recorder.stored(records.lines.count)
                activity.stored(count: records.lines.count, newestRecordTime: newestRecordTime)
            }
            self.noteActivity(activity, of: stream)
            if case .success = result, let records,
                pendingAck.offer(records.highestSequence, bytes: records.lines.byteCount)
            {
                events.yield(.ack)
            }
            completion(result)
        }
    }
}

/// What a stream's receiving task and its cancellation share on the stream's loop.
private final class ReceiverSlot {
    var receiver: StreamReceiver?
    var cancelled = false
}

extension String {
    /// Without leading and trailing spaces and tabs.
    var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }) else { return "" }
        let last = lastIndex(where: { !isSpace($0) })!
        return self[first...last]
    }
}
