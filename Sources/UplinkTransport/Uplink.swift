import AsyncHTTPClient
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import UplinkCore
import UplinkWire

/// The agent's side of the stream: one long-lived HTTP upload to the collector, fed from the circular buffer
/// through a bound stream pair, with acknowledgements, resume, heartbeats, stall detection, reconnects with
/// backoff, and a drain on shutdown.
///
/// The decisions live in `UplinkStateMachine`; `UplinkDriver` performs them on the stream's event loop. It writes into
/// the pair only when the pair signalled space (or when the ring signals new data while such a signal is held): no
/// timers, no polling. Timers exist only for the heartbeat, stall detection, backoff and the drain deadline.
public final class Uplink: Service {
    public let configuration: UplinkConfiguration
    public let ring: RecordRing
    let logger: Logger
    /// The event loop the stream's connection and the uplink's driver live on: every event of the stream (space in
    /// the pair, response lines, timers, the ring's data notification) is handled there, synchronously.
    public let eventLoop: any EventLoop
    /// Waits out a backoff delay instead of the event loop's timer (tests observe the schedule with it).
    let backoffSleep: (@Sendable (Duration) async throws -> Void)?
    let statisticsBox = Mutex(UplinkStatistics())
    /// Reads `uplink.tls`'s files and reads them again when they change; nil for an `http://` URL.
    let tlsReloader: TLSReloader?
    /// Remote configuration hints in, the agent's status out (nil: none).
    let remoteConfig: RemoteConfigRelay?
    /// The running driver (to hand over or stop), and whether a hand-over was asked for before it ran.
    private let control = Mutex<(driver: NIOLoopBound<UplinkDriver>?, handOverRequested: Bool)>((nil, false))

    /// - Parameters:
    ///   - eventLoop: the loop the stream lives on (the agent passes the one its sources read on); by default one of
    ///     NIO's shared group. Its connection, TLS and every event of the stream are there.
    ///   - backoffSleep: waits out a backoff delay; by default a timer on `eventLoop`. Tests substitute it to observe
    ///     the schedule.
    public init(
        configuration: UplinkConfiguration,
        ring: RecordRing,
        logger: Logger,
        eventLoop: (any EventLoop)? = nil,
        backoffSleep: (@Sendable (Duration) async throws -> Void)? = nil,
        remoteConfig: RemoteConfigRelay? = nil
    ) {
        self.configuration = configuration
        self.ring = ring
        self.logger = logger
        self.eventLoop = eventLoop ?? MultiThreadedEventLoopGroup.singleton.next()
        self.backoffSleep = backoffSleep
        self.remoteConfig = remoteConfig
        self.tlsReloader = configuration.usesTLS ? TLSReloader(settings: configuration.tls, logger: logger) : nil
    }

    /// A snapshot of the counters.
    public func statistics() -> UplinkStatistics {
        statisticsBox.withLock { $0 }
    }

    /// Streams until graceful shutdown (then drains, bounded by `drainTimeout`) or cancellation (then stops at once).
    public func run() async throws {
        let loop = eventLoop
        if let proxy = configuration.proxy {
            logger.info("uplink tunnels through an HTTP proxy", metadata: ["proxy": "\(proxy)"])
        }
        let (driver, finished) = try await loop.submit {
            let driver = UplinkDriver(uplink: self, loop: loop)
            return (NIOLoopBound(driver, eventLoop: loop), driver.finished.futureResult)
        }.get()
        let handOverRequested = control.withLock { control in
            control.driver = driver
            return control.handOverRequested
        }
        loop.execute {
            driver.value.start()
            if handOverRequested { driver.value.handle(.handOver) }
        }
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                try? await finished.get()
            } onGracefulShutdown: {
                loop.execute { driver.value.handle(.shutdown) }
            }
        } onCancel: {
            loop.execute { driver.value.stopNow() }
        }
        control.withLock { $0.driver = nil }
    }

    /// Ends this uplink's work in favour of a successor on the same ring (a reload changed the uplink settings):
    /// it sends no new frames, waits until the collector acknowledged what its stream carried (at most
    /// `drainTimeout`), ends the stream cleanly, and `run()` returns. The successor resumes from the ring, so a
    /// change of collector neither loses nor duplicates records.
    public func handOver() {
        let driver = control.withLock { control in
            control.handOverRequested = true
            return control.driver
        }
        guard let driver else { return }
        eventLoop.execute { driver.value.handle(.handOver) }
    }

    /// The settings of the HTTP client the remote configuration's requests go through (`RemoteConfigClient`; the
    /// stream has a connection of its own, `StreamConnector`): the connect timeout (`effectiveConnectTimeout`), no read
    /// timeout, no decompression, no retrying of its own, the proxy and the server name override of `uplink`. (TLS
    /// settings go with each request, so that rotated certificates apply to the next connection.)
    public static func clientConfiguration(_ uplink: UplinkConfiguration) -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        // No read timeout: an idle stream legitimately receives nothing; stalls are detected by the uplink itself.
        configuration.timeout = .init(connect: .nanoseconds(uplink.effectiveConnectTimeout.nanoseconds), read: nil)
        configuration.decompression = .disabled
        // Reconnects follow uplink.backoff alone: a refused connection or a failed TLS handshake fails the request at
        // once (AHC would otherwise retry on its own until the connect timeout, hiding the cause for 10 s).
        configuration.connectionPool.retryConnectionEstablishment = false
        // A stream body cannot be sent again: a redirect is an answer like any other non-200 one.
        configuration.redirectConfiguration = .disallow
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

/// Everything that wakes the uplink's driver; each is handled on the stream's event loop.
enum UplinkEvent: Sendable {
    typealias ConnectionID = UplinkStateMachine.ConnectionID
    case responseHead(ConnectionID, status: Int, detail: String?)
    /// The response head carried `Uplink-Config`: the collector reads `config_status` lines.
    case configAdvertised(ConnectionID)
    case ackLine(ConnectionID, AckLine)
    case streamFailed(ConnectionID, StreamFailure)
    case spaceAvailable(ConnectionID)
    case dataAvailable
    case deadline
    case backoffElapsed
    case shutdown
    case handOver
}
