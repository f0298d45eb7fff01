import FoundationEssentials
import HTTPTypes
import HummingbirdCore
import NIOCore
import NIOPosix
import Logging
import ServiceLifecycle
import UplinkConfig
import UplinkObservability

/// The agent's HTTP endpoint on `agent.metrics_listen`:
///
/// - `GET /metrics`: Prometheus text format (docs/metrics.md, "The agent's and the collector's own series").
/// - `GET /healthz`: `200 ok` while the process answers.
/// - `GET /readyz`: `200 ready` once every source has started, else `503`; `/readyz?stream=1` also requires the
///   stream to the collector to be open and flowing.
/// - `GET /v1/status`: `AgentStatus` as JSON (what `uplink status` shows).
///
/// It has no authentication: bind it to loopback unless a scraper elsewhere needs it. It does nothing between
/// requests apart from sampling per-source counts every 5 s for the status' records per second. If the address
/// cannot be bound, the agent logs an error and keeps streaming without the endpoint.
final class AgentEndpoint: Service, Sendable {
    let address: ConfigHostPort
    let observer: AgentObserver
    let exposition: MetricsExposition
    let logger: Logger

    init(address: ConfigHostPort, observer: AgentObserver, exposition: MetricsExposition, logger: Logger) {
        self.address = address
        self.observer = observer
        self.exposition = exposition
        self.logger = logger
    }

    func run() async throws {
        let hook = observer.registerSeries(in: exposition)
        defer { exposition.removeScrapeHook(hook) }
        let logger = self.logger
        let address = self.address
        // HummingbirdCore's server, not Hummingbird's `Application`: that one refreshes a cached Date header every
        // second, which an idle agent would pay for all day. These answers need no Date header.
        let server: any Service
        do {
            // An idle connection (a scraper between scrapes, or a client that never sends) is closed after 30 s.
            server = try HTTPServerBuilder.http1(configuration: .init(idleTimeout: .seconds(30))).buildServer(
                configuration: ServerConfiguration(address: .hostname(address.host, port: address.port)),
                eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger,
                responder: { [self] request, writer, _ in
                    let (status, contentType, body) = self.answer(request)
                    var head = HTTPResponse(status: status)
                    head.headerFields[.contentType] = contentType
                    head.headerFields[.contentLength] = String(body.readableBytes)
                    try await writer.write(response: head, body: ResponseBody(byteBuffer: body))
                },
                onServerRunning: { channel in
                    let port = channel.localAddress?.port ?? address.port
                    logger.info("metrics endpoint listening", metadata: ["address": "\(address.host):\(port)"])
                })
        } catch {
            return logger.error("metrics endpoint not started: \(error); the agent keeps streaming without it")
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.sampleRates() }
            group.addTask {
                do {
                    try await server.run()
                } catch is CancellationError {
                } catch {
                    logger.error(
                        "metrics endpoint could not listen on \(address): \(error); the agent keeps streaming without it (agent.metrics_listen)")
                }
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// The answer to one request: status, content type and body.
    private func answer(_ request: Request) -> (HTTPResponse.Status, String, ByteBuffer) {
        let text = "text/plain; charset=utf-8"
        guard request.method == .get else {
            return (.methodNotAllowed, text, ByteBuffer(string: "only GET\n"))
        }
        switch request.uri.path {
        case "/metrics":
            return (.ok, MetricsExposition.contentType, ByteBuffer(bytes: exposition.render()))
        case "/healthz":
            return (.ok, text, ByteBuffer(string: "ok\n"))
        case "/readyz":
            let requireStream = request.uri.queryParameters["stream"].map { $0 == "1" || $0 == "true" } ?? false
            let ready = observer.isReady(requireStream: requireStream)
            return (ready ? .ok : .serviceUnavailable, text, ByteBuffer(string: ready ? "ready\n" : "not ready\n"))
        case "/v1/status":
            let body = (try? AgentStatus.encoder().encode(observer.status())) ?? Data("{}".utf8)
            return (.ok, "application/json", ByteBuffer(bytes: body))
        default:
            return (.notFound, text, ByteBuffer(string: "not found: the agent serves /metrics, /healthz, /readyz and /v1/status\n"))
        }
    }

    /// Samples per-source counts for the status' records per second until cancelled or shut down.
    private func sampleRates() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                self.observer.rates.sample(self.observer.agent.ring.statistics().sources, now: .now)
                try? await Task.sleep(for: SourceRateHistory.interval)
            }
        }
    }
}
