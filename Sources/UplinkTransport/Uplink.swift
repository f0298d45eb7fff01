import AsyncHTTPClient
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import UplinkCore
import UplinkWire

/// The agent's side of the stream: one long-lived HTTP upload to the collector, fed from the circular buffer
/// through a bound stream pair, with acknowledgements, resume, heartbeats, stall detection, reconnects with
/// backoff, and a drain on shutdown.
///
/// The decisions live in `UplinkStateMachine`; this type performs them. It writes into the pair only when the pair
/// signalled space (or when the ring signals new data while such a signal is held): no timers, no polling.
/// Timers exist only for the heartbeat, stall detection and the drain deadline.
public final class Uplink: Service {
    public let configuration: UplinkConfiguration
    public let ring: RecordRing
    let logger: Logger
    let backoffSleep: @Sendable (Duration) async throws -> Void
    private let suppliedClient: HTTPClient?
    let statisticsBox = Mutex(UplinkStatistics())
    let metrics = UplinkMetrics()
    /// Reads `uplink.tls`'s files and reads them again when they change; nil for an `http://` URL.
    let tlsReloader: TLSReloader?
    /// The running driver's events (to hand over), and whether a hand-over was asked for before it ran.
    private let handOverState = Mutex<(events: AsyncStream<UplinkEvent>.Continuation?, requested: Bool)>((nil, false))

    /// - Parameters:
    ///   - httpClient: the client to use; by default the uplink creates and shuts down its own (with the
    ///     configuration's proxy and server name). A supplied client's proxy settings apply instead.
    ///   - backoffSleep: waits out a backoff delay; tests substitute it to observe the schedule.
    public init(
        configuration: UplinkConfiguration,
        ring: RecordRing,
        logger: Logger,
        httpClient: HTTPClient? = nil,
        backoffSleep: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) {
        self.configuration = configuration
        self.ring = ring
        self.logger = logger
        self.suppliedClient = httpClient
        self.backoffSleep = backoffSleep
        self.tlsReloader = configuration.usesTLS ? TLSReloader(settings: configuration.tls, logger: logger) : nil
    }

    /// A snapshot of the counters.
    public func statistics() -> UplinkStatistics {
        statisticsBox.withLock { $0 }
    }

    /// Streams until graceful shutdown (then drains, bounded by `drainTimeout`) or cancellation (then stops at once).
    public func run() async throws {
        let client = suppliedClient
            ?? HTTPClient(eventLoopGroupProvider: .singleton, configuration: Self.clientConfiguration(configuration))
        if let proxy = configuration.proxy, suppliedClient == nil {
            logger.info("uplink tunnels through an HTTP proxy", metadata: ["proxy": "\(proxy)"])
        }
        let (events, continuation) = AsyncStream.makeStream(of: UplinkEvent.self)
        let driver = UplinkDriver(uplink: self, client: client, events: continuation)
        let handOverRequested = handOverState.withLock { state in
            state.events = continuation
            return state.requested
        }
        if handOverRequested { continuation.yield(.handOver) }
        await withGracefulShutdownHandler {
            await driver.run(events)
        } onGracefulShutdown: {
            continuation.yield(.shutdown)
        }
        handOverState.withLock { $0.events = nil }
        continuation.finish()
        if suppliedClient == nil { try await client.shutdown() }
    }

    /// Ends this uplink's work in favour of a successor on the same ring (a reload changed the uplink settings):
    /// it sends no new frames, waits until the collector acknowledged what its stream carried (at most
    /// `drainTimeout`), ends the stream cleanly, and `run()` returns. The successor resumes from the ring, so a
    /// change of collector neither loses nor duplicates records.
    public func handOver() {
        let events = handOverState.withLock { state in
            state.requested = true
            return state.events
        }
        events?.yield(.handOver)
    }

    /// The HTTP client's settings: the connect timeout (`effectiveConnectTimeout`), no read timeout, no
    /// decompression, no retrying of its own, the proxy and the server name override of `uplink`. (TLS settings go
    /// with each request, so that rotated certificates apply to the next connection.)
    public static func clientConfiguration(_ uplink: UplinkConfiguration) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        // No read timeout: an idle stream legitimately receives nothing; stalls are detected by the uplink itself.
        configuration.timeout = .init(connect: .nanoseconds(uplink.effectiveConnectTimeout.nanoseconds), read: nil)
        configuration.decompression = .disabled
        // Reconnects follow uplink.backoff alone: a refused connection or a failed TLS handshake fails the request at
        // once (AHC would otherwise retry on its own until the connect timeout, hiding the cause for 10 s).
        configuration.connectionPool.retryConnectionEstablishment = false
        if let proxy = uplink.proxy {
            let authorization = proxy.username.map { HTTPClient.Authorization.basic(username: $0, password: proxy.password ?? "") }
            configuration.proxy = .server(host: proxy.host, port: proxy.port, authorization: authorization)
        }
        if uplink.usesTLS, let serverName = uplink.tls.serverName, let target = ProxyEnvironment.Target(url: uplink.url) {
            configuration.dnsOverride = [serverName: target.host]
        }
        return configuration
    }
}

/// Everything that wakes the uplink, funnelled into one stream so one task owns all state.
enum UplinkEvent: Sendable {
    typealias ConnectionID = UplinkStateMachine.ConnectionID
    case responseHead(ConnectionID, status: Int, detail: String?)
    case ackLine(ConnectionID, AckLine)
    case streamFailed(ConnectionID, StreamFailure)
    case spaceAvailable(ConnectionID)
    case dataAvailable
    case deadline
    case backoffElapsed
    case shutdown
    case handOver
}
