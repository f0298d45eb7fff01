#if canImport(Glibc)
import Glibc
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import UplinkCore
import UplinkProcess
import UplinkWire

/// `uplink-bench fleet --port P --agents N --rate R --seconds S [--warmup W] [--line-bytes B] [--threads T]
/// [--compression none|zstd|gzip] [--host H]`: the load generator of `deploy/fleet.sh`, which measures a collector
/// process's CPU per record when many agents each send a few lines a second.
///
/// It simulates N agents in this process, on T event loops (default 1). Each opens one HTTP/1.1 connection to the
/// collector, sends `POST /v1/stream` with the headers docs/protocol.md requires (`Uplink-Agent: fleet-<i>`, a
/// random `Uplink-Epoch`, no compression unless asked), and waits for its `resume` line. At most 64 streams are being
/// opened at once, far below the collector's listen backlog (1,024). Once every stream is open, each agent writes R
/// record lines a second for W + S seconds, each line its own chunk (an agent at a low rate with `uplink.linger: 0`
/// writes each record as it comes), framed as the agent frames a tailed log line: the agent's `NDJSONFrameEncoder`
/// and `WireLineWriter`, a B−1 byte message (a B-byte line of a file, newline included) with a `path` field and an
/// origin and offset. Every agent's sends are due at fixed times (start + k/R s, not a delay after the previous
/// one), and agent i starts i/(N·R) s after agent 0, so the N·R lines a second arrive evenly spread, not as one
/// burst per period. Each agent then sends its final chunk and waits until the collector acknowledges its last
/// sequence (at most 30 s for all of them).
///
/// Standard output, one line per event, for the script to act on as it happens:
///
///     fleet open agents=N ms=…                             every stream is open (and how long that took)
///     fleet window-start sent=…                            after the warm-up: the measured window begins
///     fleet window-end records=… ms=…                      records sent in the window, and its length
///     fleet result agents=N rate=R sent=… acked=… complete=… failed=… resumed=… late_max_ms=… late_10ms=…
///
/// `complete` counts agents whose every record was acknowledged; `resumed`, streams whose `resume` was not 0 (a
/// fresh epoch must get 0); `late_max_ms` and `late_10ms`, how far behind its schedule this generator wrote (the
/// worst, and how many writes were more than 10 ms late: if many are, the generator did not keep up and the
/// collector saw bursts). Failures go to standard error. The exit status is 0 when every agent completed.
///
/// Deliberately missing, because the measurement does not need them: reconnects, a ring, heartbeats (streams last
/// seconds, far below `stream_idle_timeout`), back-pressure beyond the socket's buffers, TLS.
enum FleetBenchmark {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    struct Options: Sendable {
        var host = "127.0.0.1"
        var port = 0
        var agents = 0
        /// Lines a second per agent.
        var rate = 0
        /// The measured window, after the warm-up.
        var seconds = 0
        var warmup = 5
        /// Bytes per line of the simulated file, newline included (the record's message is one byte shorter).
        var lineBytes = 200
        var threads = 1
        var compression = WireCompression.none
        /// Most streams being opened (connected, not yet resumed) at once.
        var openingAtOnce = 64
        /// How long opening every stream may take.
        var openSeconds: Int64 = 120
        /// How long after the last scheduled line every record must be acknowledged.
        var drainSeconds: Int64 = 30
    }

    static let usage = """
        usage: uplink-bench fleet --port P --agents N --rate R --seconds S [--warmup W] [--line-bytes B] [--threads T] \
        [--compression none|zstd|gzip] [--host H]   (a collector on H:P, default host 127.0.0.1)
        """

    /// Runs the fleet to the end; returns whether every agent had all its records acknowledged.
    static func run(arguments: [String]) throws -> Bool {
        let options = try parse(arguments)
        try ensureDescriptors(for: options.agents)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: options.threads)
        defer { try? group.syncShutdownGracefully() }
        let loops = Array(group.makeIterator())
        let coordinator = loops[0]
        let progress = FleetProgress(
            agents: options.agents, allOpened: coordinator.makePromise(), allFinished: coordinator.makePromise())

        // Agents i, i+T, i+2T, … live on loop i.
        let fleets = try loops.enumerated().map { index, loop in
            try loop.submit {
                NIOLoopBound(
                    LoopFleet(
                        loop: loop, indices: Array(stride(from: index, to: options.agents, by: loops.count)),
                        options: options, progress: progress),
                    eventLoop: loop)
            }.wait()
        }

        // Opening.
        let opening = NIODeadline.now()
        let openTimeout = coordinator.scheduleTask(in: .seconds(options.openSeconds)) {
            progress.allOpened.fail(
                Failure(description: "only \(progress.openedCount) of \(options.agents) streams opened in \(options.openSeconds) s"))
        }
        for fleet in fleets { fleet.eventLoop.execute { fleet.value.openMore() } }
        do {
            try progress.allOpened.futureResult.wait()
        } catch {
            throw Failure(description: "\(error) (\(progress.openedCount) of \(options.agents) streams open)")
        }
        openTimeout.cancel()
        emit("fleet open agents=\(options.agents) ms=\(milliseconds(NIODeadline.now() - opening))")

        // Sending: the warm-up, then the measured window, marked on standard output as it begins and ends.
        let start = NIODeadline.now() + .milliseconds(50)
        for fleet in fleets { fleet.eventLoop.execute { fleet.value.startSending(at: start) } }
        let windowStart = start + .seconds(Int64(options.warmup))
        let windowEnd = windowStart + .seconds(Int64(options.seconds))
        let window = coordinator.makePromise(of: Void.self)
        coordinator.scheduleTask(deadline: windowStart) {
            let sentBefore = progress.sent.load(ordering: .relaxed)
            let began = NIODeadline.now()
            emit("fleet window-start sent=\(sentBefore)")
            coordinator.scheduleTask(deadline: windowEnd) {
                let records = progress.sent.load(ordering: .relaxed) - sentBefore
                emit("fleet window-end records=\(records) ms=\(milliseconds(NIODeadline.now() - began))")
                window.succeed()
            }
        }
        try window.futureResult.wait()

        // Draining: every agent ends its request after its last line and waits for the ack of it.
        let drainTimeout = coordinator.scheduleTask(deadline: windowEnd + .seconds(options.drainSeconds)) {
            progress.allFinished.fail(Failure(description: "not every record acknowledged \(options.drainSeconds) s after the last"))
        }
        var drainFailure: (any Error)?
        do { try progress.allFinished.futureResult.wait() } catch { drainFailure = error }
        drainTimeout.cancel()

        let summaries = try fleets.map { fleet in try fleet.eventLoop.submit { fleet.value.summary() }.wait() }
        let total = summaries.reduce(into: LoopFleet.Summary()) { $0.add($1) }
        if let drainFailure { report("\(drainFailure)") }
        for failure in total.failures.prefix(10) { report(failure) }
        if total.failures.count > 10 { report("… and \(total.failures.count - 10) more agents failed") }
        emit(
            "fleet result agents=\(options.agents) rate=\(options.rate) sent=\(total.sent) acked=\(total.acknowledged)"
                + " complete=\(total.complete) failed=\(total.failures.count) resumed=\(total.resumed)"
                + " late_max_ms=\(milliseconds(.nanoseconds(total.lateMaximum))) late_10ms=\(total.lateOver10ms)")
        return total.complete == options.agents
    }

    // MARK: - Arguments and limits

    private static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var index = 0
        func value(_ name: String, in range: ClosedRange<Int>) throws -> Int {
            guard index + 1 < arguments.count, let number = Int(arguments[index + 1]), range.contains(number) else {
                throw Failure(description: "\(name) needs a number from \(range.lowerBound) to \(range.upperBound)\n\(usage)")
            }
            index += 1
            return number
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--port": options.port = try value("--port", in: 1...65535)
            case "--agents": options.agents = try value("--agents", in: 1...100_000)
            case "--rate": options.rate = try value("--rate", in: 1...100_000)
            case "--seconds": options.seconds = try value("--seconds", in: 1...3600)
            case "--warmup": options.warmup = try value("--warmup", in: 0...3600)
            case "--line-bytes": options.lineBytes = try value("--line-bytes", in: 2...(1 << 20))
            case "--threads": options.threads = try value("--threads", in: 1...64)
            case "--host" where index + 1 < arguments.count:
                options.host = arguments[index + 1]
                index += 1
            case "--compression" where index + 1 < arguments.count:
                guard let compression = WireCompression(rawValue: arguments[index + 1]) else {
                    throw Failure(description: "--compression is none, zstd or gzip\n\(usage)")
                }
                options.compression = compression
                index += 1
            default:
                throw Failure(description: "unexpected argument \(arguments[index])\n\(usage)")
            }
            index += 1
        }
        guard options.port > 0, options.agents > 0, options.rate > 0, options.seconds > 0 else {
            throw Failure(description: usage)
        }
        options.openingAtOnce = max(1, options.openingAtOnce / options.threads)
        return options
    }

    /// One descriptor per stream and a few more: raises the soft limit to the hard one, and refuses to start below.
    private static func ensureDescriptors(for agents: Int) throws {
        let limit = FileDescriptorLimit.raiseSoftLimit()
        guard limit.current >= UInt64(agents + 64) else {
            throw Failure(
                description: "\(agents) streams need \(agents + 64) descriptors; the limit is \(limit.current) (hard \(limit.hard)): raise it (ulimit -n)")
        }
    }

    // MARK: - Output

    /// A line to standard output at once (the script reads it as it happens; `print` would buffer it in a pipe).
    static func emit(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { write(STDOUT_FILENO, $0.baseAddress, $0.count) }
    }

    static func report(_ line: String) {
        let bytes = Array("uplink-bench fleet: \(line)\n".utf8)
        _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    static func milliseconds(_ amount: TimeAmount) -> Int64 { amount.nanoseconds / 1_000_000 }
}

/// What every loop's agents add to, and the two moments the main thread waits for.
final class FleetProgress: Sendable {
    let agents: Int
    /// Succeeds when the last stream got its `resume`; fails when one could not be opened.
    let allOpened: EventLoopPromise<Void>
    /// Succeeds when the last agent completed (every record acknowledged) or failed.
    let allFinished: EventLoopPromise<Void>
    /// Record lines written, all agents together.
    let sent = Atomic<Int>(0)
    private let opened = Atomic<Int>(0)
    private let finished = Atomic<Int>(0)

    init(agents: Int, allOpened: EventLoopPromise<Void>, allFinished: EventLoopPromise<Void>) {
        self.agents = agents
        self.allOpened = allOpened
        self.allFinished = allFinished
    }

    var openedCount: Int { opened.load(ordering: .relaxed) }

    func streamOpened() {
        if opened.wrappingAdd(1, ordering: .relaxed).newValue == agents { allOpened.succeed() }
    }

    func streamRefused(_ reason: String) {
        allOpened.fail(FleetBenchmark.Failure(description: reason))
    }

    func agentFinished() {
        if finished.wrappingAdd(1, ordering: .relaxed).newValue == agents { allFinished.succeed() }
    }
}

/// The agents of one event loop. Used on that loop only.
final class LoopFleet {
    struct Summary: Sendable {
        var sent = 0
        var acknowledged = 0
        var complete = 0
        var resumed = 0
        var failures: [String] = []
        var lateMaximum: Int64 = 0
        var lateOver10ms = 0

        mutating func add(_ other: Summary) {
            sent += other.sent
            acknowledged += other.acknowledged
            complete += other.complete
            resumed += other.resumed
            failures += other.failures
            lateMaximum = max(lateMaximum, other.lateMaximum)
            lateOver10ms += other.lateOver10ms
        }
    }

    let loop: any EventLoop
    let options: FleetBenchmark.Options
    let progress: FleetProgress
    /// The message of every record: a line of the simulated file without its newline.
    let message: [UInt8]
    let fields = [Tag("path", "/var/log/fleet.log")]
    let encoder = NDJSONFrameEncoder()
    private var agents: [FleetAgent] = []
    private var nextToOpen = 0
    private var opening = 0
    private var lateMaximum: Int64 = 0
    private var lateOver10ms = 0

    init(loop: any EventLoop, indices: [Int], options: FleetBenchmark.Options, progress: FleetProgress) {
        self.loop = loop
        self.options = options
        self.progress = progress
        let text = Array(Array("fleet line ".utf8).prefix(options.lineBytes - 1))
        message = text + [UInt8](repeating: UInt8(ascii: "x"), count: options.lineBytes - 1 - text.count)
        agents = indices.map { FleetAgent(index: $0, fleet: self) }
    }

    /// Starts opening streams until `openingAtOnce` are being opened.
    func openMore() {
        while opening < options.openingAtOnce && nextToOpen < agents.count {
            let agent = agents[nextToOpen]
            nextToOpen += 1
            opening += 1
            agent.open()
        }
    }

    /// An agent's stream was opened, or could not be.
    func openingSettled() {
        opening -= 1
        openMore()
    }

    func startSending(at start: NIODeadline) {
        for agent in agents { agent.startSending(at: start) }
    }

    /// A write happened `lateness` after it was due.
    func noteLateness(_ lateness: TimeAmount) {
        lateMaximum = max(lateMaximum, lateness.nanoseconds)
        if lateness > .milliseconds(10) { lateOver10ms += 1 }
    }

    func summary() -> Summary {
        var summary = Summary(lateMaximum: lateMaximum, lateOver10ms: lateOver10ms)
        for agent in agents {
            summary.sent += Int(agent.sequence)
            summary.acknowledged += Int(min(agent.acknowledged, agent.sequence))
            if agent.isComplete { summary.complete += 1 }
            if let resume = agent.resume, resume != 0 { summary.resumed += 1 }
            if let failure = agent.failure { summary.failures.append("\(agent.name): \(failure)") }
        }
        return summary
    }
}

/// One simulated agent: its connection's handler, and the timer that writes its lines.
final class FleetAgent: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private enum State {
        case idle, opening, open, sending, ended, done
    }

    let index: Int
    let name: String
    private unowned let fleet: LoopFleet
    private let epoch = UInt64.random(in: 1...UInt64(Int64.max))
    private let originID = UInt64.random(in: 1...UInt64(Int64.max))
    private var state = State.idle
    private var context: ChannelHandlerContext?
    private var compressor: StreamCompressor?
    private var responseLines = LineSplitter(maxLineBytes: 64 << 10)
    private var status: HTTPResponseStatus?
    /// The start of a refusal's body, for the report.
    private var refusal: [UInt8] = []
    private var frame: [UInt8] = []
    private var offset: UInt64 = 0
    /// When the first line is due, and how many lines this agent sends.
    private var firstDue = NIODeadline.uptimeNanoseconds(0)
    private var count: UInt64 = 0
    private var timer: Scheduled<Void>?
    /// The collector's `resume`, once it came.
    private(set) var resume: UInt64?
    /// The last sequence written (lines written so far).
    private(set) var sequence: UInt64 = 0
    /// The highest sequence acknowledged.
    private(set) var acknowledged: UInt64 = 0
    private(set) var failure: String?

    init(index: Int, fleet: LoopFleet) {
        self.index = index
        self.name = "fleet-\(index)"
        self.fleet = fleet
    }

    /// Every line written, the request ended, and the last line acknowledged.
    var isComplete: Bool { failure == nil && state == .done }

    // MARK: Opening

    func open() {
        state = .opening
        let options = fleet.options
        let handler = NIOLoopBound(self, eventLoop: fleet.loop)
        ClientBootstrap(group: fleet.loop)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(handler.value)
                }
            }
            .connect(host: options.host, port: options.port)
            .assumeIsolated()
            .whenFailure { [self] error in fail("cannot connect to \(options.host):\(options.port): \(error)") }
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        let options = fleet.options
        var head = HTTPRequestHead(version: .http1_1, method: .POST, uri: "/v1/stream")
        head.headers.add(name: "Host", value: "\(options.host):\(options.port)")
        head.headers.add(name: "Transfer-Encoding", value: "chunked")
        head.headers.add(name: "Content-Type", value: "application/x-ndjson")
        head.headers.add(name: "Uplink-Protocol", value: "1")
        head.headers.add(name: "Uplink-Agent", value: name)
        head.headers.add(name: "Uplink-Epoch", value: String(epoch))
        if let encoding = options.compression.contentEncoding {
            head.headers.add(name: "Content-Encoding", value: encoding)
            do {
                compressor = try StreamCompressor(options.compression)
            } catch {
                return fail("\(error)")
            }
        }
        context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
        context.fireChannelActive()
    }

    // MARK: Sending

    /// Schedules the lines: the first at `start` + this agent's phase, then one every 1/rate s.
    func startSending(at start: NIODeadline) {
        guard state == .open else { return }
        let options = fleet.options
        let second: Int64 = 1_000_000_000
        let phase = Int64(index) * second / (Int64(options.rate) * Int64(options.agents))
        let span = Int64(options.warmup + options.seconds) * second
        firstDue = start + .nanoseconds(phase)
        // Every k with phase + k/rate s before the end of the span.
        count = UInt64((span - phase) * Int64(options.rate) + second - 1) / UInt64(second)
        state = .sending
        scheduleNext()
    }

    private func scheduleNext() {
        // Due at fixed times, so a late write does not shift the ones after it.
        let due = firstDue + .nanoseconds(Int64(sequence) * 1_000_000_000 / Int64(fleet.options.rate))
        timer = fleet.loop.assumeIsolated().scheduleTask(deadline: due) { [self] in writeLine(due: due) }
    }

    private func writeLine(due: NIODeadline) {
        guard state == .sending, let context else { return }
        fleet.noteLateness(NIODeadline.now() - due)
        sequence += 1
        offset += UInt64(fleet.options.lineBytes)
        frame.removeAll(keepingCapacity: true)
        fleet.message.withUnsafeBytes { message in
            fleet.encoder.encodeLogFrame(
                timestamp: WallClock.nowNanoseconds(), source: "app", message: message, fields: fleet.fields,
                origin: RecordOrigin(id: originID, offset: offset), into: &frame)
        }
        var line = context.channel.allocator.buffer(capacity: frame.count + 32)
        _ = frame.withUnsafeBytes { WireLineWriter.appendRecordLine(sequence: sequence, frame: $0, to: &line) }
        if let compressor {
            var compressed = context.channel.allocator.buffer(capacity: 0)
            do {
                try compressor.compress(line, flush: true, into: &compressed)
            } catch {
                return fail("\(error)")
            }
            line = compressed
        }
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(line))), promise: nil)
        fleet.progress.sent.add(1, ordering: .relaxed)
        if sequence < count {
            scheduleNext()
        } else {
            state = .ended
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            completeIfAcknowledged()
        }
    }

    // MARK: Receiving

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            status = head.status
        case .body(let chunk):
            guard status == .ok else {
                refusal += chunk.readableBytesView.prefix(max(0, 300 - refusal.count))
                return
            }
            responseLines.append(chunk)
            while let piece = responseLines.nextLine() {
                guard case .line(let line) = piece, let parsed = AckLine.parse(line) else { continue }
                switch parsed {
                case .resume(let mark): resumed(mark)
                case .ack(let mark):
                    acknowledged = max(acknowledged, mark)
                    completeIfAcknowledged()
                }
            }
        case .end:
            if let status, status != .ok {
                let reason = String(decoding: refusal, as: UTF8.self).split(separator: "\n").first ?? ""
                fail("HTTP \(status.code) \(reason)")
            } else {
                fail("the collector ended the response at ack \(acknowledged) of \(sequence)")
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail("the connection closed at ack \(acknowledged) of \(sequence)")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail("\(error)")
        context.close(promise: nil)
    }

    private func resumed(_ mark: UInt64) {
        guard state == .opening else { return }
        resume = mark
        state = .open
        fleet.openingSettled()
        fleet.progress.streamOpened()
    }

    private func completeIfAcknowledged() {
        guard state == .ended, acknowledged >= sequence else { return }
        state = .done
        fleet.progress.agentFinished()
    }

    /// Ends this agent with `reason`, unless it is done already (then the connection may close as it likes).
    private func fail(_ reason: String) {
        guard state != .done, failure == nil else { return }
        let wasOpening = state == .opening
        failure = reason
        state = .done
        timer?.cancel()
        context?.close(promise: nil)
        if wasOpening {
            fleet.openingSettled()
            fleet.progress.streamRefused("\(name): \(reason)")
        } else {
            fleet.progress.agentFinished()
        }
    }
}
#endif
