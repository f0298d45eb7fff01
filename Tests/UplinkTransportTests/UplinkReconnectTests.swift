import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing
import UplinkCore
import UplinkTestSupport
@testable import UplinkTransport

/// Reconnects on real loopback sockets: every attempt is one connection, followed by one `uplink.backoff` delay;
/// a refused connection fails at once; a connect that gets no answer fails after `connect_timeout`.
///
/// The uplink's `backoffSleep` is replaced by a `BackoffRecorder`: it records each delay asked for together with the
/// uplink's counters at that moment, returns at once for the first delays (so no test waits out a real backoff), and
/// holds the last one until the test stops the uplink. No assertion depends on how long anything took.
@Suite("Uplink reconnect schedule", .timeLimit(.minutes(2)))
struct UplinkReconnectTests {
    static let backoff = Backoff(initial: .milliseconds(100), multiplier: 2, maximum: .seconds(2))
    static let seed: UInt64 = 42

    @Test("Against a refused port: N attempts, each refused at once and followed by exactly one backoff delay")
    func refusedPort() async throws {
        let port = try FreePort.pick()
        let attempts = 8
        // Long connect and stall timeouts: only a failure that comes at once lets eight attempts finish in the test's
        // bounded wait.
        var configuration = Self.configuration(port: port)
        configuration.connectTimeout = .seconds(300)
        configuration.stallTimeout = .seconds(3600)
        let recorder = BackoffRecorder(returningAtOnce: attempts - 1)
        try await Self.run(configuration, recorder: recorder) { uplink in
            #expect(await recorder.waitForCalls(attempts))
        }

        let calls = recorder.calls
        try #require(calls.count == attempts)
        var random = SplitMix64(seed: Self.seed)
        for (index, call) in calls.enumerated() {
            // The k-th delay follows the k-th attempt and nothing else: one attempt, one failure per delay.
            #expect(call.connectionAttempts == index + 1, "delay \(index)")
            #expect(call.failures == index + 1, "delay \(index)")
            #expect(call.delay >= .zero && call.delay <= Self.backoff.ceiling(attempt: index), "delay \(index): \(call.delay)")
            // The schedule is exactly uplink.backoff's, drawn with the configured jitter seed.
            #expect(call.delay == Self.backoff.delay(attempt: index, using: &random), "delay \(index)")
            guard case .transport(let text) = call.failure else {
                Issue.record("attempt \(index + 1) failed with \(String(describing: call.failure)), not a transport failure")
                continue
            }
            #expect(text.hasPrefix("connection refused"), "attempt \(index + 1): \(text)")
            #expect(!text.contains("connect_timeout"), "attempt \(index + 1): \(text)")
        }
    }

    @Test("Each attempt is exactly one TCP connection: a listener that accepts and drops counts one per attempt")
    func oneConnectionPerAttempt() async throws {
        // The proxy accepts every connection, finds its upstream refusing and closes the client's connection.
        let proxy = FaultProxy(upstreamPort: try FreePort.pick())
        try await proxy.start()
        let attempts = 6
        let recorder = BackoffRecorder(returningAtOnce: attempts - 1, observing: { proxy.acceptedConnectionCount })
        try await Self.run(Self.configuration(port: proxy.port), recorder: recorder) { _ in
            #expect(await recorder.waitForCalls(attempts))
        }
        try await proxy.stop()

        let calls = recorder.calls
        try #require(calls.count == attempts)
        for (index, call) in calls.enumerated() {
            #expect(call.connectionAttempts == index + 1, "delay \(index)")
            // Counted by the listener: the k-th failure came after exactly k connections, none retried by the client.
            #expect(call.observed == index + 1, "delay \(index): \(call.observed) connections accepted")
            #expect(call.delay <= Self.backoff.ceiling(attempt: index))
        }
        #expect(proxy.acceptedConnectionCount == attempts)
    }

    @Test("A connect that never completes fails with the connect timeout, before the longer stall timeout")
    func connectTimeout() async throws {
        let hole = try LoopbackSockets.BlackHole()
        // The filler connection must be queued before the uplink's SYN arrives, or the uplink would take its place.
        let full = await eventually(timeout: .seconds(10)) { hole.isFull }
        try #require(full, "the listener's accept queue did not fill: \(hole.acceptQueue())")

        var configuration = Self.configuration(port: hole.port)
        configuration.connectTimeout = .seconds(1)
        // The comparison that shows connect_timeout is what ended the attempt: a stall timer four times as long (and
        // shorter than AsyncHTTPClient's own 10 s default) runs from the same start.
        configuration.stallTimeout = .seconds(4)
        #expect(Uplink.clientConfiguration(configuration).timeout.connect == .seconds(1))
        let recorder = BackoffRecorder(returningAtOnce: 0)
        let started = ContinuousClock.now
        try await Self.run(configuration, recorder: recorder) { _ in
            #expect(await recorder.waitForCalls(1, within: .seconds(60)))
        }
        let calls = recorder.calls
        try #require(calls.count == 1)
        let call = calls[0]
        #expect(call.connectionAttempts == 1)
        guard case .transport(let text) = call.failure else {
            Issue.record("the attempt failed with \(String(describing: call.failure)), not with the connect timeout")
            return
        }
        #expect(text.contains("no connection within the connect timeout (1.0 seconds, uplink.connect_timeout)"), "\(text)")
        // A lower bound only: the attempt did wait for its connect timeout.
        #expect(call.at - started >= .seconds(1))
        // The uplink's SYN was dropped: only the filler is queued.
        #expect(hole.acceptQueue().length == 1, "\(hole.acceptQueue())")
    }

    @Test("A TLS handshake that never completes fails with the connect timeout too")
    func tlsHandshakeTimeout() async throws {
        let silent = try LoopbackSockets.Silent()
        var configuration = Self.configuration(port: silent.port)
        configuration.url = "https://127.0.0.1:\(silent.port)"
        configuration.connectTimeout = .seconds(1)
        configuration.stallTimeout = .seconds(4)
        let recorder = BackoffRecorder(returningAtOnce: 0)
        try await Self.run(configuration, recorder: recorder) { _ in
            #expect(await recorder.waitForCalls(1, within: .seconds(60)))
        }
        let calls = recorder.calls
        try #require(calls.count == 1)
        guard case .transport(let text) = calls[0].failure else {
            Issue.record("the attempt failed with \(String(describing: calls[0].failure)), not with the connect timeout")
            return
        }
        #expect(text.contains("no connection within the connect timeout (1.0 seconds, uplink.connect_timeout)"), "\(text)")
    }

    @Test("A peer that answers with bytes that are not HTTP: each attempt fails saying so, then backs off; nothing crashes")
    func answerThatIsNotHTTP() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let garbage = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(NotHTTP()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let attempts = 3
        let recorder = BackoffRecorder(returningAtOnce: attempts - 1)
        try await Self.run(Self.configuration(port: garbage.localAddress!.port!), recorder: recorder) { _ in
            #expect(await recorder.waitForCalls(attempts))
        }
        try await garbage.close()
        try await group.shutdownGracefully()
        for (index, call) in recorder.calls.enumerated() {
            #expect(call.connectionAttempts == index + 1)
            guard case .transport(let text) = call.failure else {
                Issue.record("attempt \(index + 1) failed with \(String(describing: call.failure)), not a transport failure")
                continue
            }
            #expect(text.hasPrefix("the collector's answer is not HTTP"), "attempt \(index + 1): \(text)")
        }
    }

    @Test("The client's connect timeout is connect_timeout, or stall_timeout when that is smaller")
    func effectiveConnectTimeout() {
        var configuration = UplinkConfiguration(url: "http://127.0.0.1:1", agentID: "a")
        #expect(configuration.connectTimeout == .seconds(5))
        #expect(Uplink.clientConfiguration(configuration).timeout.connect == .seconds(5))
        #expect(Uplink.clientConfiguration(configuration).connectionPool.retryConnectionEstablishment == false)
        configuration.connectTimeout = .milliseconds(1500)
        #expect(Uplink.clientConfiguration(configuration).timeout.connect == .milliseconds(1500))
        configuration.connectTimeout = .seconds(60)
        configuration.stallTimeout = .seconds(20)
        #expect(configuration.effectiveConnectTimeout == .seconds(20))
        #expect(Uplink.clientConfiguration(configuration).timeout.connect == .seconds(20))
    }

    // MARK: Helpers

    static func configuration(port: Int) -> UplinkConfiguration {
        UplinkConfiguration(
            url: "http://127.0.0.1:\(port)", agentID: "reconnect-test", backoff: backoff, drainTimeout: .zero,
            jitterSeed: seed)
    }

    /// Runs an uplink with `recorder` as its backoff sleep while `body` runs, then cancels it and waits for it.
    static func run(
        _ configuration: UplinkConfiguration, recorder: BackoffRecorder, _ body: (Uplink) async throws -> Void
    ) async throws {
        let uplink = Uplink(
            configuration: configuration, ring: RecordRing(capacity: 1 << 20), logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() },
            backoffSleep: recorder.sleep)
        recorder.attach(uplink)
        let task = Task { try await uplink.run() }
        do {
            try await body(uplink)
        } catch {
            task.cancel()
            _ = try? await task.value
            throw error
        }
        task.cancel()
        try await task.value
    }
}

/// Answers every connection at once with a greeting that no HTTP response starts with, and keeps it open.
private final class NotHTTP: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    func channelActive(context: ChannelHandlerContext) {
        context.writeAndFlush(NIOAny(ByteBuffer(string: "SSH-2.0-OpenSSH_9.2\r\n\r\n")), promise: nil)
    }
}

/// A backoff sleep that records every delay it is asked for, with the uplink's counters at that moment.
final class BackoffRecorder: Sendable {
    struct Call: Sendable {
        var delay: Duration
        var at: ContinuousClock.Instant
        var connectionAttempts: Int
        var failures: Int
        var failure: StreamFailure?
        /// What `observing` returned (e.g. connections a listener accepted).
        var observed: Int
    }

    private let returningAtOnce: Int
    private let observing: @Sendable () -> Int
    private let state = Mutex<(uplink: Uplink?, calls: [Call])>((nil, []))

    /// - Parameters:
    ///   - returningAtOnce: how many calls return at once; later calls wait until cancelled.
    ///   - observing: read at every call, recorded as `Call.observed`.
    init(returningAtOnce: Int, observing: @escaping @Sendable () -> Int = { 0 }) {
        self.returningAtOnce = returningAtOnce
        self.observing = observing
    }

    func attach(_ uplink: Uplink) {
        state.withLock { $0.uplink = uplink }
    }

    var calls: [Call] { state.withLock { $0.calls } }

    var sleep: @Sendable (Duration) async throws -> Void {
        { [self] delay in try await self.record(delay) }
    }

    private func record(_ delay: Duration) async throws {
        let observed = observing()
        let index = state.withLock { state -> Int in
            let statistics = state.uplink?.statistics()
            state.calls.append(Call(
                delay: delay, at: .now, connectionAttempts: statistics?.connectionAttempts ?? -1,
                failures: statistics?.failures ?? -1, failure: statistics?.lastFailure, observed: observed))
            return state.calls.count
        }
        if index > returningAtOnce {
            try await Task.sleep(for: .seconds(3600))
        }
    }

    /// Waits (polling, bounded) until the sleep was called `count` times.
    func waitForCalls(_ count: Int, within limit: Duration = .seconds(30)) async -> Bool {
        await eventually(timeout: limit) { self.calls.count >= count }
    }
}
