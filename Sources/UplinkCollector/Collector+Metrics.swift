import Hummingbird
import Prometheus
import Synchronization
import UplinkObservability

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Collector {
    /// `GET /metrics` (Prometheus text format) and `GET /readyz`, on the collector's own port.
    func addObservabilityRoutes(to router: Router<CollectorRequestContext>, storage: Storage) {
        let exposition = self.exposition
        router.get("metrics") { _, _ -> Response in
            Response(
                status: .ok, headers: [.contentType: MetricsExposition.contentType],
                body: .init(byteBuffer: ByteBuffer(bytes: exposition.render())))
        }
        router.get("readyz") { _, _ -> Response in
            let problem = self.readinessProblem(storage: storage)
            return Response(
                status: problem == nil ? .ok : .serviceUnavailable, headers: [.contentType: "text/plain; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: problem.map { "not ready: \($0)\n" } ?? "ready\n")))
        }
    }

    /// Why the collector should not be sent new streams now, or nil when it should (`/readyz`): it is shutting
    /// down, its storage failed to write the last records or its data directory is not writable, or it serves
    /// `max_streams` streams already.
    func readinessProblem(storage: Storage) -> String? {
        if registry.isShuttingDown { return "shutting down" }
        if storage.isFailing { return "the last records could not be stored (see the log)" }
        if access(configuration.dataDirectory, W_OK) != 0 { return "the data directory is not writable" }
        if recorder.snapshot(marks: [:]).activeStreams >= configuration.maxStreams {
            return "serving max_streams (\(configuration.maxStreams)) streams"
        }
        return nil
    }

    /// Adds the series read at scrape time: per sink (delivered, retried, dead-lettered, lost, lag) and the stream
    /// limit. Counts the collector keeps as it goes reach the exposition through swift-metrics.
    func registerSeries() -> ScrapeHook {
        let registry = exposition.registry
        let limit = registry.makeGauge(
            name: "uplink_collector_max_streams", help: "Concurrent streams the collector accepts (collector.max_streams).")
        limit.record(Int64(configuration.maxStreams))
        let sinks = SinkSeries(registry)
        return exposition.addScrapeHook { [self] in
            let end = forwarding.withLock { $0.first?.log.committedEnd }
            for statistics in sinkStatistics() { sinks.update(statistics, logEnd: end) }
        }
    }
}

/// The per-sink series (`uplink_collector_sink_*{sink}`), one set per configured sink.
private final class SinkSeries: Sendable {
    private let registry: PrometheusCollectorRegistry
    private let series = Mutex<[String: (forwarded: ScrapedCounter, retries: ScrapedCounter, deadLettered: ScrapedCounter, lost: ScrapedCounter, lag: Gauge)]>([:])

    init(_ registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    func update(_ statistics: SinkStatistics, logEnd: Int64?) {
        let set = series.withLock { series in
            if let set = series[statistics.name] { return set }
            let labels = [("sink", statistics.name)]
            let set = (
                forwarded: ScrapedCounter(
                    registry, name: "uplink_collector_sink_records_forwarded_total", labels: labels,
                    help: "Records the sink's store accepted."),
                retries: ScrapedCounter(
                    registry, name: "uplink_collector_sink_retries_total", labels: labels,
                    help: "Deliveries to the sink that failed and were retried."),
                deadLettered: ScrapedCounter(
                    registry, name: "uplink_collector_sink_dead_lettered_total", labels: labels,
                    help: "Records the sink's store refused for good, written to the dead-letter file."),
                lost: ScrapedCounter(
                    registry, name: "uplink_collector_sink_lost_total", labels: labels,
                    help: "Records retention deleted before the sink had them."),
                lag: registry.makeGauge(
                    name: "uplink_collector_sink_lag_bytes", labels: labels,
                    help: "Bytes of the collector's log not yet delivered to the sink."))
            series[statistics.name] = set
            return set
        }
        set.forwarded.update(to: statistics.recordsForwarded)
        set.retries.update(to: statistics.retries)
        set.deadLettered.update(to: statistics.recordsDeadLettered)
        set.lost.update(to: statistics.recordsLost)
        if let logEnd { set.lag.record(Int64(max(0, logEnd - statistics.cursor))) }
    }
}
