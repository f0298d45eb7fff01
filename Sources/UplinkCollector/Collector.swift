import Hummingbird
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import Synchronization
import UplinkCore
import UplinkObservability

/// The receiving end of the uplink stream protocol (docs/protocol.md): an HTTP server that accepts one long-lived
/// upload per agent, stores its records in its write-ahead log, streams back acknowledgements, and forwards the
/// log to the sinks.
///
/// Run it as a `Service` (in a `ServiceGroup`, or by calling `run()`); graceful shutdown ends every stream after
/// its current batch, with its response ended cleanly. Marks (the highest sequence stored per agent and epoch)
/// survive restarts: the log and the marks ledger in the data directory hold them.
///
/// ```swift
/// let collector = Collector(configuration: .init(port: 0), logger: logger)
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { try await collector.run() }
///     let port = try await collector.waitUntilListening()
///     …
/// }
/// ```
public final class Collector: Service {
    /// The configuration the collector was created with.
    public let configuration: CollectorConfiguration
    let logger: Logger
    let output: any CollectorOutput
    let marks = MarkTable()
    let recorder = StatisticsRecorder()
    let registry = AgentRegistry()
    let edge = CollectorEdge()
    /// Per-agent activity for `agents()`, `/v1/fleet` and the fleet page.
    let fleetTable = FleetTable()
    /// The port once listening, or why the collector never will.
    private let listening = AsyncLatch<Result<Int, any Error>>()
    private let started = Mutex(false)
    /// The forwarders of `configuration.sinks` while running.
    let forwarding = Mutex<[Forwarder]>([])
    /// What `/metrics` serves.
    let exposition: MetricsExposition
    /// Checks remote documents for `collector.remote_config` (the agent's validator, injected by the executable).
    let documentValidator: RemoteDocumentValidator?
    /// The remote configuration once `run()` loaded it.
    let remote = Mutex<RemoteConfigService?>(nil)

    /// Creates a collector; nothing happens before `run()`.
    ///
    /// - Parameters:
    ///   - configuration: Where to listen and store.
    ///   - logger: Used for the collector's own messages (start, gaps, storage errors, streams at debug level).
    ///   - stdout: Where sinks of type `stdout` (and the implicit one of `configuration.stdoutSink`) write; tests
    ///     inject their own. The process's standard output by default.
    ///   - metrics: What `/metrics` serves: by default the process's exposition (`MetricsExposition.bootstrap()`),
    ///     or, when the process has none, one with only the series the collector reads at scrape time.
    ///   - documentValidator: The agent's validator of remote documents, required with
    ///     `configuration.remoteConfig` (the collector refuses to serve a document it finds problems in).
    public init(
        configuration: CollectorConfiguration, logger: Logger, stdout: any CollectorOutput = StandardOutput(),
        metrics: MetricsExposition? = nil, documentValidator: RemoteDocumentValidator? = nil
    ) {
        self.configuration = configuration
        self.logger = logger
        self.output = stdout
        self.exposition = metrics ?? MetricsExposition.current ?? MetricsExposition()
        self.documentValidator = documentValidator
    }

    /// Recovers the marks from the data directory, then serves until graceful shutdown or cancellation.
    ///
    /// Throws when the data directory cannot be used or the address cannot be bound, and when called a second
    /// time.
    public func run() async throws {
        let alreadyStarted = started.withLock { started in
            defer { started = true }
            return started
        }
        guard !alreadyStarted else {
            throw CollectorError(code: "already_started", message: "Collector.run() can be called only once")
        }
        do {
            try configuration.checkLimits()
            // Read before anything else, so that a bad certificate or key stops the start, not the first handshake.
            let tls = try configuration.tls?.serverConfiguration()
            let storage = try await Storage.open(configuration: configuration, marks: marks, recorder: recorder, logger: logger)
            do {
                try await withForwarders(storage: storage) { try await serve(storage: storage, tls: tls) }
            } catch {
                await storage.close()
                throw error
            }
            await storage.close()
        } catch {
            finishListening(.failure(error))
            throw error
        }
        finishListening(.failure(CollectorError(code: "not_listening", message: "the collector has stopped")))
    }

    /// Returns the TCP port the collector listens on, once it does (useful with `port: 0`).
    ///
    /// Throws when `run()` failed or ended before listening, or when the calling task is cancelled.
    public func waitUntilListening() async throws -> Int {
        try await listening.waitUnlessCancelled().get()
    }

    /// The counts so far and the current marks.
    public func statistics() -> CollectorStatistics {
        recorder.snapshot(marks: marks.streamMarks())
    }

    /// What the network edge refused, cut or noticed so far: limits, deadlines, TLS and identity.
    public func edgeStatistics() -> CollectorEdgeStatistics {
        edge.recorder.snapshot()
    }

    /// The streams open now, one per agent: how each is connected and who its certificate says it is.
    public func openStreams() -> [OpenStream] {
        registry.openStreams()
    }

    /// Settles `waitUntilListening()`: the first result wins.
    private func finishListening(_ result: Result<Int, any Error>) {
        listening.open(with: result)
    }

    private func serve(storage: Storage, tls: TLSConfiguration?) async throws {
        let router = Router(context: CollectorRequestContext.self)
        router.get("healthz") { _, _ -> String in "ok" }
        router.get("/") { request, _ in self.fleetPage(request) }
        router.get("v1/fleet") { request, _ in self.fleetData(request) }
        addObservabilityRoutes(to: router, storage: storage)
        try addRemoteConfigRoutes(to: router)
        let seriesHook = registerSeries()
        defer { exposition.removeScrapeHook(seriesHook) }
        router.post("v1/stream") { request, context -> Response in
            await self.openStream(request, context: context, storage: storage)
        }
        let port = configuration.port
        let application = Application(
            router: router,
            server: serverBuilder(tls: tls),
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: port), serverName: nil, backlog: 1024),
            onServerRunning: { channel in
                await self.guardAccepting(channel)
                let bound = channel.localAddress?.port ?? port
                self.logger.info(
                    "Collector listening",
                    metadata: [
                        "host": "\(self.configuration.host)", "port": "\(bound)", "data": "\(self.configuration.dataDirectory)",
                        "tls": "\(self.tlsDescription)",
                    ])
                self.finishListening(.success(bound))
            },
            logger: logger
        )
        try await withGracefulShutdownHandler {
            try await application.run()
        } onGracefulShutdown: {
            self.registry.stopAll()
        }
    }
}

/// The request context of the collector's routes: the basics plus the connection, which a replaced or
/// shut-down stream closes.
struct CollectorRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }
}
