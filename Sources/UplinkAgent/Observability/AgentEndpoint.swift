import FoundationEssentials
import Hummingbird
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
        let router = Router()
        let exposition = self.exposition
        let observer = self.observer
        router.get("metrics") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: MetricsExposition.contentType],
                body: .init(byteBuffer: ByteBuffer(bytes: exposition.render())))
        }
        router.get("healthz") { _, _ -> String in "ok\n" }
        router.get("readyz") { request, _ -> Response in
            let requireStream = request.uri.queryParameters["stream"].map { $0 == "1" || $0 == "true" } ?? false
            let ready = observer.isReady(requireStream: requireStream)
            return Response(
                status: ready ? .ok : .serviceUnavailable, headers: [.contentType: "text/plain; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: ready ? "ready\n" : "not ready\n")))
        }
        router.get("v1/status") { _, _ -> Response in
            let body = (try? AgentStatus.encoder().encode(observer.status())) ?? Data("{}".utf8)
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        let logger = self.logger
        let address = self.address
        let application = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port), serverName: nil),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? address.port
                logger.info("metrics endpoint listening", metadata: ["address": "\(address.host):\(port)"])
            },
            logger: logger)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.sampleRates() }
            group.addTask {
                do {
                    try await application.run()
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
