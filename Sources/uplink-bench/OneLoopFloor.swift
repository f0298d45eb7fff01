#if canImport(Glibc)
import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import UplinkCore
import UplinkWire

/// `uplink-bench one-loop-floor PORT FILE`: a measuring instrument for issue #16 item 1 (agent CPU per line), not an
/// agent. It follows one file and streams its lines to a collector with the agent's own parts (the NDJSON frame
/// encoder, the ring, the wire line writer, zstd flushed per pass, ack lines) but with the whole path on ONE event
/// loop and no Swift task on it: the file's inotify descriptor is a channel on the loop of the HTTP/1.1 connection,
/// and a modification event reads the file, encodes, appends to the ring, takes the unsent frames and writes them
/// as one chunk, all in that callback. `deploy/steady-rate.sh` runs it beside the agent (`UPLINK_STEADY_FLOOR`), so
/// the gap between the agent and this floor is what its stages (tail task, driver task, AsyncHTTPClient's body
/// task, their hand-offs) cost.
///
/// Deliberately missing, because the measurement does not need them: reconnects, resume, checkpoints, rotation,
/// heartbeats, back-pressure beyond the channel's writability, TLS.
enum OneLoopFloor {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs until the connection closes.
    static func run(arguments: [String]) throws {
        guard arguments.count == 2, let port = Int(arguments[0]) else {
            throw Failure(description: "usage: uplink-bench one-loop-floor PORT FILE (a collector on 127.0.0.1:PORT)")
        }
        let path = arguments[1]
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { throw Failure(description: "cannot open \(path): errno \(errno)") }
        let inotify = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard inotify >= 0, inotify_add_watch(inotify, path, UInt32(IN_MODIFY)) >= 0 else {
            throw Failure(description: "cannot watch \(path): errno \(errno)")
        }
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let connection = try ClientBootstrap(group: loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(
                        try FloorSender(file: file, path: path, inotify: inotify))
                }
            }
            .connect(host: "127.0.0.1", port: port).wait()
        try connection.closeFuture.wait()
    }
}

/// The inotify channel's handler: any modification event makes the sender read the file.
private final class ModificationReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let sender: FloorSender

    init(sender: FloorSender) {
        self.sender = sender
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        sender.readAndSend()
    }
}

/// The HTTP/1.1 connection's handler: sends the request head, then a chunk per pass; reads ack lines.
private final class FloorSender: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let file: Int32
    private let inotify: Int32
    private var context: ChannelHandlerContext?
    private var offset: off_t = 0
    private var readBuffer = [UInt8](repeating: 0, count: 128 << 10)
    /// The end of the file read so far that is not a whole line yet.
    private var partialLine: [UInt8] = []
    private let ring = RecordRing()
    private let sourceID: SourceID
    private let encoder = NDJSONFrameEncoder()
    private let fields: [Tag]
    private let compressor: StreamCompressor
    private var acknowledgements = LineSplitter(maxLineBytes: 64 * 1024)

    init(file: Int32, path: String, inotify: Int32) throws {
        self.file = file
        self.inotify = inotify
        self.fields = [Tag("path", path)]
        self.sourceID = ring.registerSource("app")
        self.compressor = try StreamCompressor(.zstd)
    }

    func channelActive(context: ChannelHandlerContext) {
        self.context = context
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/v1/stream")
        head.headers.add(name: "Host", value: "127.0.0.1")
        head.headers.add(name: "Transfer-Encoding", value: "chunked")
        head.headers.add(name: "Content-Type", value: "application/x-ndjson")
        head.headers.add(name: "Content-Encoding", value: WireCompression.zstd.contentEncoding ?? "zstd")
        head.headers.add(name: "Uplink-Protocol", value: "1")
        head.headers.add(name: "Uplink-Agent", value: "steady")
        head.headers.add(name: "Uplink-Epoch", value: String(UInt64.random(in: 1...(1 << 62))))
        context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
        followModifications(on: context.eventLoop)
        readAndSend()
    }

    /// Makes the inotify descriptor a channel on this connection's loop: the event and the write happen on one
    /// thread, in one callback.
    private func followModifications(on loop: any EventLoop) {
        let sender = NIOLoopBound(self, eventLoop: loop)
        let connection = context?.channel
        NIOPipeBootstrap(group: loop)
            // inotify refuses reads into a buffer smaller than the next event: a fixed 4 KiB is always enough here.
            .channelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 4096))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ModificationReader(sender: sender.value))
                }
            }
            .takingOwnershipOfDescriptor(input: inotify)
            .whenFailure { error in
                print("one-loop-floor: cannot follow the file's modifications: \(error)")
                connection?.close(promise: nil)
            }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .body(let chunk) = unwrapInboundIn(data) else { return }
        acknowledgements.append(chunk)
        while let piece = acknowledgements.nextLine() {
            if case .line(let line) = piece, case .ack(let sequence)? = AckLine.parse(line) {
                ring.acknowledge(through: sequence)
            }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { readAndSend() }
    }

    /// Reads what the file has, appends its whole lines to the ring, and writes the unsent frames, a chunk per 256 KiB
    /// of lines, while the connection takes them.
    func readAndSend() {
        guard let context, context.channel.isWritable else { return }
        while true {
            let count = readBuffer.withUnsafeMutableBytes { pread(file, $0.baseAddress, $0.count, offset) }
            guard count > 0 else { break }
            offset += off_t(count)
            appendLines(readBuffer[..<count])
            if count < readBuffer.count { break }
        }
        while context.channel.isWritable {
            var lines = context.channel.allocator.buffer(capacity: 4096)
            let taken = ring.readUnsent(maxBytes: 256 << 10) { sequence, first, second in
                WireLineWriter.appendRecordLine(sequence: sequence, frame: first, second, to: &lines)
            }
            guard taken > 0 else { return }
            var compressed = context.channel.allocator.buffer(capacity: 0)
            do {
                try compressor.compress(lines, flush: true, into: &compressed)
            } catch {
                context.close(promise: nil)
                return
            }
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(compressed))), promise: nil)
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
#endif
