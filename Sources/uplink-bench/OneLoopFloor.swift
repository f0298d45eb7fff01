#if canImport(Glibc)
import Glibc
import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOPosix
import UplinkCore
import UplinkWire

/// `uplink-bench one-loop-floor PORT FILE [STAGES]`: a measuring instrument for the agent's CPU per line, not an
/// agent. It follows one file and streams its lines to a collector on 127.0.0.1:PORT with the agent's
/// own parts (the NDJSON frame encoder, the ring, the wire line writer, zstd flushed per write, ack lines), over a
/// plain NIO HTTP/1.1 connection whose event loop also watches the file (its inotify descriptor is a channel there).
/// `deploy/steady-rate.sh` runs it beside the agent (`UPLINK_STEADY_FLOOR`, `UPLINK_STEADY_FLOOR_STAGES`).
///
/// STAGES says how a line gets from the inotify event to the socket, so that the cost of each kind of hand-off can
/// be told apart:
/// - `callback` (default): the event's callback reads, encodes, appends to the ring, takes the unsent frames and
///   writes them, on the loop's thread, with no Swift task;
/// - `loop-tasks`: as the agent is built (a reader task woken by the event, a writer task woken through an
///   `AsyncStream` by the ring's data notification), but both tasks prefer an executor that runs their jobs on the
///   connection's event loop;
/// - `global-tasks`: the same two tasks on Swift's global executor; their writes hop to the loop;
/// - `callback-ahc`: as `callback`, but the connection and the request are AsyncHTTPClient's, as the agent's were
///   before it had a connection of its own (the delegate API on the loop, a streamed body whose writer takes each
///   chunk): the gap to `callback` is what AsyncHTTPClient's write path costs per line.
///
/// Deliberately missing, because the measurement does not need them: reconnects, resume, checkpoints, rotation,
/// heartbeats, back-pressure beyond the channel's writability, TLS.
enum OneLoopFloor {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    enum Stages: String {
        case callback, tasksOnLoop = "loop-tasks", tasksOnGlobalExecutor = "global-tasks"
        case callbackThroughAsyncHTTPClient = "callback-ahc"
    }

    /// The stream request's headers (a zstd body from agent `steady`, a fresh epoch), as the agent sends them.
    static func streamHeaders() -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/x-ndjson")
        headers.add(name: "Content-Encoding", value: WireCompression.zstd.contentEncoding ?? "zstd")
        headers.add(name: "Uplink-Protocol", value: "1")
        headers.add(name: "Uplink-Agent", value: "steady")
        headers.add(name: "Uplink-Epoch", value: String(UInt64.random(in: 1...(1 << 62))))
        return headers
    }

    /// Reads the collector's response `chunk` for ack lines and releases what they acknowledge from `ring`.
    static func acknowledge(_ chunk: ByteBuffer, lines: inout LineSplitter, in ring: RecordRing) {
        lines.append(chunk)
        while let piece = lines.nextLine() {
            if case .line(let line) = piece, case .ack(let sequence)? = AckLine.parse(line) {
                ring.acknowledge(through: sequence)
            }
        }
    }

    /// Runs until the connection closes.
    static func run(arguments: [String]) throws {
        guard (2...3).contains(arguments.count), let port = Int(arguments[0]),
            let stages = arguments.count == 3 ? Stages(rawValue: arguments[2]) : .callback
        else {
            throw Failure(
                description:
                    "usage: uplink-bench one-loop-floor PORT FILE [callback|loop-tasks|global-tasks|callback-ahc] (a collector on 127.0.0.1:PORT)")
        }
        let path = arguments[1]
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { throw Failure(description: "cannot open \(path): errno \(errno)") }
        let inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0, inotify_add_watch(inotify, path, UInt32(IN_MODIFY)) >= 0 else {
            throw Failure(description: "cannot watch \(path): errno \(errno)")
        }
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        if stages == .callbackThroughAsyncHTTPClient {
            try FloorAsyncHTTPClientStream.run(port: port, file: file, path: path, inotify: inotify, loop: loop)
            return
        }
        let connection = try ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(
                        FloorConnection(stages: stages, file: file, path: path, inotify: inotify))
                }
            }
            .connect(host: "127.0.0.1", port: port).wait()
        try connection.closeFuture.wait()
    }
}

/// Reads what the file has and appends its whole lines to the ring, as the tailer does (one batch per read).
private final class FloorFileReader {
    private let file: Int32
    private let ring: RecordRing
    private let sourceID: SourceID
    private let encoder = NDJSONFrameEncoder()
    private let fields: [Tag]
    private var offset: off_t = 0
    private var readBuffer = [UInt8](repeating: 0, count: 128 << 10)
    /// The end of the file read so far that is not a whole line yet.
    private var partialLine: [UInt8] = []

    init(file: Int32, path: String, ring: RecordRing) {
        self.file = file
        self.ring = ring
        self.sourceID = ring.registerSource("app")
        self.fields = [Tag("path", path)]
    }

    func readAppending() {
        while true {
            let count = readBuffer.withUnsafeMutableBytes { pread(file, $0.baseAddress, $0.count, offset) }
            guard count > 0 else { return }
            offset += off_t(count)
            appendLines(readBuffer[..<count])
            if count < readBuffer.count { return }
        }
    }

    private func appendLines(_ bytes: ArraySlice<UInt8>) {
        partialLine.append(contentsOf: bytes)
        let now = WallClock.nowNanoseconds()
        var batch = LogLineBatch(source: "app", fields: fields, originID: 1)
        var start = 0
        partialLine.withUnsafeBytes { text in
            for index in text.indices where text[index] == UInt8(ascii: "\n") {
                let lineEnd = offset - off_t(text.count - index - 1)
                batch.append(
                    message: UnsafeRawBufferPointer(rebasing: text[start..<index]), timestamp: now,
                    originOffset: UInt64(lineEnd))
                start = index + 1
            }
        }
        partialLine.removeFirst(start)
        guard !batch.isEmpty else { return }
        let (frames, ends) = encoder.encodeLogFrames(batch)
        frames.withUnsafeBytes { all in
            var from = 0
            for end in ends {
                ring.append(UnsafeRawBufferPointer(rebasing: all[from..<end]), source: sourceID)
                from = end
            }
        }
    }
}

/// Writes the ring's unsent frames, a zstd-flushed chunk per 256 KiB of lines, while the connection is writable.
private final class FloorChunkWriter {
    private let ring: RecordRing
    private let compressor: StreamCompressor
    private let isWritable: () -> Bool
    private let write: (ByteBuffer) -> Void
    private let fail: () -> Void

    init(
        ring: RecordRing, isWritable: @escaping () -> Bool, write: @escaping (ByteBuffer) -> Void,
        fail: @escaping () -> Void
    ) throws {
        self.ring = ring
        self.compressor = try StreamCompressor(.zstd)
        self.isWritable = isWritable
        self.write = write
        self.fail = fail
    }

    /// Onto a NIO channel of the HTTP/1.1 client handlers.
    convenience init(ring: RecordRing, channel: any Channel) throws {
        try self.init(
            ring: ring, isWritable: { channel.isWritable },
            write: { channel.writeAndFlush(HTTPClientRequestPart.body(.byteBuffer($0)), promise: nil) },
            fail: { channel.close(promise: nil) })
    }

    func writeUnsent() {
        while isWritable() {
            var lines = ByteBuffer()
            let taken = ring.readUnsent(maxBytes: 256 << 10) { sequence, first, second in
                WireLineWriter.appendRecordLine(sequence: sequence, frame: first, second, to: &lines)
            }
            guard taken > 0 else { return }
            var compressed = ByteBuffer()
            do {
                try compressor.compress(lines, flush: true, into: &compressed)
            } catch {
                fail()
                return
            }
            write(compressed)
        }
    }
}

/// The inotify channel's handler: a modification event calls `onModification` on the loop.
private final class ModificationReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let onModification: @Sendable () -> Void

    init(onModification: @escaping @Sendable () -> Void) {
        self.onModification = onModification
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        onModification()
    }
}

/// The HTTP/1.1 connection's handler: sends the request head, starts the stages, reads ack lines.
private final class FloorConnection: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let stages: OneLoopFloor.Stages
    private let file: Int32
    private let path: String
    private let inotify: Int32
    private let ring = RecordRing()
    private var acknowledgements = LineSplitter(maxLineBytes: 64 * 1024)
    /// `callback`: the stages, run by the event's callback.
    private var reader: FloorFileReader?
    private var writer: FloorChunkWriter?
    /// The task stages: wakes the writer task when the connection becomes writable again.
    private var writerWakeups: AsyncStream<Void>.Continuation?

    init(stages: OneLoopFloor.Stages, file: Int32, path: String, inotify: Int32) {
        self.stages = stages
        self.file = file
        self.path = path
        self.inotify = inotify
    }

    func channelActive(context: ChannelHandlerContext) {
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/v1/stream", headers: OneLoopFloor.streamHeaders())
        head.headers.add(name: "Host", value: "127.0.0.1")
        head.headers.add(name: "Transfer-Encoding", value: "chunked")
        context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
        do {
            switch stages {
            case .callback:
                reader = FloorFileReader(file: file, path: path, ring: ring)
                writer = try FloorChunkWriter(ring: ring, channel: context.channel)
                let connection = NIOLoopBound(self, eventLoop: context.eventLoop)
                followModifications(on: context.eventLoop, channel: context.channel) { connection.value.readAndSend() }
                readAndSend()
            case .callbackThroughAsyncHTTPClient:
                preconditionFailure("callback-ahc runs on AsyncHTTPClient's connection, not this one")
            case .tasksOnLoop, .tasksOnGlobalExecutor:
                let executor = stages == .tasksOnLoop ? EventLoopTaskExecutor(loop: context.eventLoop) : nil
                let readerWakeups = startTasks(channel: context.channel, executor: executor)
                followModifications(on: context.eventLoop, channel: context.channel) { readerWakeups.yield() }
            }
        } catch {
            print("one-loop-floor: \(error)")
            context.close(promise: nil)
        }
    }

    /// Starts the reader and the writer task; returns what wakes the reader.
    private func startTasks(channel: any Channel, executor: (any TaskExecutor)?) -> AsyncStream<Void>.Continuation {
        let (readerEvents, readerWakeups) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let (writerEvents, writerWakeups) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.writerWakeups = writerWakeups
        let (ring, file, path) = (ring, file, path)
        Task(executorPreference: executor) {
            let reader = FloorFileReader(file: file, path: path, ring: ring)
            reader.readAppending()
            for await _ in readerEvents { reader.readAppending() }
        }
        Task(executorPreference: executor) {
            guard let writer = try? FloorChunkWriter(ring: ring, channel: channel) else { return channel.close(promise: nil) }
            var wakeups = writerEvents.makeAsyncIterator()
            while true {
                writer.writeUnsent()
                // Not writable: writability wakes it. Written out: the ring's next append wakes it (unless one came
                // in meanwhile: then go on at once), as the agent's driver does.
                if channel.isWritable && !ring.notifyWhenDataAvailable({ writerWakeups.yield() }) { continue }
                guard await wakeups.next() != nil else { return }
            }
        }
        return readerWakeups
    }

    /// Makes the inotify descriptor a channel on this connection's loop.
    private func followModifications(
        on loop: any EventLoop, channel connection: any Channel, _ onModification: @escaping @Sendable () -> Void
    ) {
        Self.followModifications(inotify: inotify, on: loop, onFailure: { connection.close(promise: nil) }, onModification)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .body(let chunk) = unwrapInboundIn(data) else { return }
        OneLoopFloor.acknowledge(chunk, lines: &acknowledgements, in: ring)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        guard context.channel.isWritable else { return }
        if stages == .callback { readAndSend() } else { writerWakeups?.yield() }
    }

    /// Makes the inotify descriptor a channel on `loop`.
    static func followModifications(
        inotify: Int32, on loop: any EventLoop, onFailure: @escaping @Sendable () -> Void,
        _ onModification: @escaping @Sendable () -> Void
    ) {
        NIOPipeBootstrap(group: loop)
            // inotify refuses reads into a buffer smaller than the next event: a fixed 4 KiB is always enough here.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 4096))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ModificationReader(onModification: onModification))
                }
            }
            .takingOwnershipOfDescriptor(input: inotify)
            .whenFailure { error in
                print("one-loop-floor: cannot follow the file's modifications: \(error)")
                onFailure()
            }
    }

    private func readAndSend() {
        reader?.readAppending()
        writer?.writeUnsent()
    }
}

/// The `callback-ahc` stage: the callback stages, with AsyncHTTPClient's connection and streamed request body on the
/// same loop, its responses read by a delegate there (as the agent's uplink does). Its state is touched on `loop`
/// only (the delegate's callbacks and the writes run there), which is what makes the unchecked `Sendable` hold.
private final class FloorAsyncHTTPClientStream: HTTPClientResponseDelegate, @unchecked Sendable {
    typealias Response = Void

    private let ring = RecordRing()
    private let file: Int32
    private let path: String
    private let inotify: Int32
    private let loop: any EventLoop
    private var acknowledgements = LineSplitter(maxLineBytes: 64 * 1024)
    private var reader: FloorFileReader?
    private var writer: FloorChunkWriter?
    /// Inside a body write (a write whose future is already complete must not re-enter the stages).
    private var sending = false
    /// The last body write has not been taken yet.
    private var paused = false

    private init(file: Int32, path: String, inotify: Int32, loop: any EventLoop) {
        self.file = file
        self.path = path
        self.inotify = inotify
        self.loop = loop
    }

    /// Runs until the request ends.
    static func run(port: Int, file: Int32, path: String, inotify: Int32, loop: any EventLoop) throws {
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .disabled
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroup: loop, configuration: configuration)
        defer { try? client.syncShutdown() }
        let headers = OneLoopFloor.streamHeaders()
        // The stream's state is bound to the loop, so it is made there.
        let response = try loop.submit {
            let stream = FloorAsyncHTTPClientStream(file: file, path: path, inotify: inotify, loop: loop)
            let bound = NIOLoopBound(stream, eventLoop: loop)
            let request = try HTTPClient.Request(
                url: "http://127.0.0.1:\(port)/v1/stream", method: .POST, headers: headers,
                body: .stream(contentLength: nil) { writer in
                    bound.value.start(writing: writer)
                })
            return client.execute(request: request, delegate: stream, eventLoop: .delegate(on: loop), deadline: nil).futureResult
        }.wait()
        try response.wait()
    }

    /// On the loop, once the client can send the body: the callback stages, each chunk to `writer`. The returned
    /// future would end the body; the stage streams until the connection closes.
    private func start(writing body: HTTPClient.Body.StreamWriter) -> EventLoopFuture<Void> {
        let ended = loop.makePromise(of: Void.self)
        let stream = NIOLoopBound(self, eventLoop: loop)
        reader = FloorFileReader(file: file, path: path, ring: ring)
        do {
            writer = try FloorChunkWriter(
                ring: ring, isWritable: { !stream.value.paused },
                write: { chunk in
                    // The write's future is already complete while the connection is writable (its callback runs
                    // inside `whenSuccess`); pending, it resumes the stages once the connection took the chunk.
                    let sender = stream.value
                    sender.sending = true
                    defer { sender.sending = false }
                    sender.paused = true
                    body.write(.byteBuffer(chunk)).whenSuccess {
                        let sender = stream.value
                        sender.paused = false
                        if !sender.sending { sender.readAndSend() }
                    }
                },
                fail: { ended.fail(OneLoopFloor.Failure(description: "cannot compress")) })
        } catch {
            ended.fail(error)
            return ended.futureResult
        }
        FloorConnection.followModifications(
            inotify: inotify, on: loop,
            onFailure: { ended.fail(OneLoopFloor.Failure(description: "cannot follow the file")) },
            { stream.value.readAndSend() })
        readAndSend()
        return ended.futureResult
    }

    private func readAndSend() {
        reader?.readAppending()
        writer?.writeUnsent()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        OneLoopFloor.acknowledge(buffer, lines: &acknowledgements, in: ring)
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Void>) throws {}
}
#endif
