import Hummingbird
import Prometheus
import Synchronization
import UplinkObservability
import UplinkWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension Collector {
    /// `GET /metrics` (Prometheus text format; behind `token` when one is set, as Bearer or as the Basic password)
    /// and `GET /readyz` (open, for load balancers), on the collector's own port.
    func addObservabilityRoutes(to router: Router<CollectorRequestContext>, storage: Storage) {
        let exposition = self.exposition
        router.get("metrics") { request, _ -> Response in
            // Per-agent series name the fleet: behind the collector's token, like the fleet page.
            if let refusal = self.fleetRefusal(request) { return refusal }
            return Response(
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

    /// Adds the collector's series, all read at scrape time from the counts the collector keeps (the same snapshots
    /// `/v1/status` shows): the stream and edge counts, per sink (delivered, retried, dead-lettered, lost, lag), per
    /// agent, and the stream limit.
    func registerSeries() -> ScrapeHook {
        let registry = exposition.registry
        let limit = registry.gauge("uplink_collector_max_streams")
        limit.record(Int64(configuration.maxStreams))
        let counts = CountSeries(exposition)
        let sinks = SinkSeries(exposition)
        let agents = AgentSeries(exposition, limit: Self.metricsAgentLimit)
        let configStates: [(ConfigStatus.State, Gauge)] =
            configuration.remoteConfig == nil
            ? []
            : ConfigStatus.State.allCases.map {
                ($0, registry.gauge("uplink_collector_config_agents", labels: [("state", $0.rawValue)]))
            }
        return exposition.addScrapeHook { [self] in
            counts.update(recorder.snapshot(marks: [:]), edge: edgeStatistics())
            let end = forwarding.withLock { $0.first?.log.committedEnd }
            for statistics in sinkStatistics() { sinks.update(statistics, logEnd: end) }
            agents.update(fleet())
            if let counts = remoteConfig?.agentsByState() {
                for (state, gauge) in configStates { gauge.record(Int64(counts[state] ?? 0)) }
            }
        }
    }

    /// Agents that get series of their own (`uplink_collector_agent_*{agent}`), the first ones seen; the
    /// collector-wide counts include every agent.
    public static let metricsAgentLimit = 200
}

/// The collector-wide counts (`CollectorStatistics`, `CollectorEdgeStatistics`) as `uplink_collector_*` series.
private final class CountSeries: Sendable {
    private let counters: [SnapshotCounter<CollectorStatistics>]
    private let edgeCounters: [SnapshotCounter<CollectorEdgeStatistics>]
    private let activeStreams: Gauge

    init(_ exposition: MetricsExposition) {
        counters = [
            exposition.counter("uplink_collector_records_stored_total") { $0.recordsStored },
            exposition.counter("uplink_collector_duplicates_total") { $0.duplicatesDiscarded },
            exposition.counter("uplink_collector_resent_total") { $0.resentDiscarded },
            exposition.counter("uplink_collector_gaps_total") { $0.gaps },
            exposition.counter("uplink_collector_missing_total") { $0.recordsMissing },
            exposition.counter("uplink_collector_malformed_lines_total") { $0.malformedLines },
            exposition.counter("uplink_collector_too_long_lines_total") { $0.tooLongLines },
            exposition.counter("uplink_collector_heartbeats_total") { $0.heartbeats },
            exposition.counter("uplink_collector_streams_total") { $0.streamsAccepted },
            exposition.counter("uplink_collector_streams_replaced_total") { $0.streamsReplaced },
            exposition.counter("uplink_collector_streams_rejected_total") { $0.streamsRejected },
            exposition.counter("uplink_collector_sink_errors_total") { $0.sinkErrors },
            exposition.counter("uplink_collector_decompression_bombs_total") { $0.decompressionBombs },
            exposition.counter("uplink_collector_corrupt_bodies_total") { $0.corruptBodies },
        ]
        edgeCounters = EdgeRecorder.Event.allCases.map { event in
            exposition.counter(event.seriesName) { (edge: CollectorEdgeStatistics) in edge[keyPath: event.keyPath] }
        }
        activeStreams = exposition.registry.gauge("uplink_collector_active_streams")
    }

    func update(_ statistics: CollectorStatistics, edge: CollectorEdgeStatistics) {
        for counter in counters { counter.update(from: statistics) }
        for counter in edgeCounters { counter.update(from: edge) }
        activeStreams.record(Int64(statistics.activeStreams))
    }
}

/// The per-agent series, for at most `limit` agents (the first seen since start) so that a fleet, or a peer
/// inventing agent ids, cannot grow the exposition without bound.
private final class AgentSeries: Sendable {
    private struct Series {
        let stored, duplicates, resent, missing, rejected: ScrapedCounter
        let connected, lag: Gauge
    }
    private let exposition: MetricsExposition
    private let limit: Int
    private let series = Mutex<[String: Series]>([:])
    private let known: Gauge
    private let connected: Gauge
    private let withoutSeries: Gauge
    private let evicted: ScrapedCounter

    init(_ exposition: MetricsExposition, limit: Int) {
        self.exposition = exposition
        self.limit = limit
        let registry = exposition.registry
        known = registry.gauge("uplink_collector_agents")
        connected = registry.gauge("uplink_collector_agents_connected")
        withoutSeries = registry.gauge("uplink_collector_agents_without_series")
        evicted = exposition.counter("uplink_collector_agents_evicted_total")
    }

    func update(_ fleet: FleetSnapshot) {
        known.record(Int64(fleet.agents.count))
        connected.record(Int64(fleet.agents.filter(\.connected).count))
        evicted.update(to: fleet.agentsEvicted)
        var without = 0
        for agent in fleet.agents {
            guard let set = seriesFor(agent.agent) else {
                without += 1
                continue
            }
            set.stored.update(to: agent.recordsStored)
            set.duplicates.update(to: agent.duplicatesDiscarded)
            set.resent.update(to: agent.resentDiscarded)
            set.missing.update(to: agent.recordsMissing)
            set.rejected.update(to: agent.rejectedLines)
            set.connected.record(Int64(agent.connected ? 1 : 0))
            let lag = agent.newestRecordTime.map { max(0, Double(fleet.now &- $0) / 1e9) } ?? 0
            set.lag.record(lag)
        }
        withoutSeries.record(Int64(without))
    }

    private func seriesFor(_ agent: String) -> Series? {
        series.withLock { series in
            if let existing = series[agent] { return existing }
            guard series.count < limit else { return nil }
            let labels = [("agent", agent)]
            let registry = exposition.registry
            func counter(_ name: String) -> ScrapedCounter { exposition.counter(name, labels: labels) }
            let set = Series(
                stored: counter("uplink_collector_agent_records_stored_total"),
                duplicates: counter("uplink_collector_agent_duplicates_total"),
                resent: counter("uplink_collector_agent_resent_total"),
                missing: counter("uplink_collector_agent_missing_total"),
                rejected: counter("uplink_collector_agent_rejected_lines_total"),
                connected: registry.gauge("uplink_collector_agent_connected", labels: labels),
                lag: registry.gauge("uplink_collector_agent_lag_seconds", labels: labels))
            series[agent] = set
            return set
        }
    }
}

/// The per-sink series (`uplink_collector_sink_*{sink}`), one set per configured sink.
private final class SinkSeries: Sendable {
    private let exposition: MetricsExposition
    private let series = Mutex<[String: (forwarded: ScrapedCounter, retries: ScrapedCounter, deadLettered: ScrapedCounter, lost: ScrapedCounter, lag: Gauge)]>([:])

    init(_ exposition: MetricsExposition) {
        self.exposition = exposition
    }

    func update(_ statistics: SinkStatistics, logEnd: Int64?) {
        let set = series.withLock { series in
            if let set = series[statistics.name] { return set }
            let labels = [("sink", statistics.name)]
            let registry = exposition.registry
            func counter(_ name: String) -> ScrapedCounter { exposition.counter(name, labels: labels) }
            let set = (
                forwarded: counter("uplink_collector_sink_records_forwarded_total"),
                retries: counter("uplink_collector_sink_retries_total"),
                deadLettered: counter("uplink_collector_sink_dead_lettered_total"),
                lost: counter("uplink_collector_sink_lost_total"),
                lag: registry.gauge("uplink_collector_sink_lag_bytes", labels: labels))
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
