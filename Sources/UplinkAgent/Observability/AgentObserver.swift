import FoundationEssentials
import Prometheus
import Synchronization
import UplinkCore
import UplinkObservability
import UplinkTransport
import UplinkWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads a running agent for its endpoint: the status (`/v1/status`, `uplink status`), readiness (`/readyz`) and
/// the series of `/metrics`, all from the same snapshots (the ring's, the uplink's, the persistent buffer's), read
/// when asked: the agent keeps each count once.
final class AgentObserver: Sendable {
    let agent: Agent
    let version: String
    private let startedAt = ContinuousClock.now
    let rates = SourceRateHistory()

    init(agent: Agent, version: String) {
        self.agent = agent
        self.version = version
    }

    /// Every source has started (its task runs, or ran and ended), and `requireStream` asks that records flow.
    func isReady(requireStream: Bool) -> Bool {
        guard agent.sourceSupervisor.sourceStates.allSatisfy(\.started) else { return false }
        return !requireStream || agent.uplink.statistics().state == .streaming
    }

    /// The agent as `uplink status` shows it.
    func status() -> AgentStatus {
        let now = WallClock.nowNanoseconds()
        let uplink = agent.uplink
        let stream = uplink.statistics()
        // One snapshot: the frame counts and the oldest frame's age describe the same ring.
        let ring = agent.ring.statistics(oldestPrefixBytes: NDJSONFrameEncoder.timestampPrefixBytes)
        let states = agent.sourceSupervisor.sourceStates
        let perSecond = rates.recordsPerSecond(current: ring.sources, now: .now, startedAt: startedAt)
        let sources = states.map { state -> AgentStatus.Source in
            let counts = ring.source(state.name)
            return AgentStatus.Source(
                name: state.name, kind: state.kind,
                state: state.ended ? "ended" : state.started ? "running" : "starting",
                records: counts?.appended ?? 0, recordsPerSecond: perSecond[state.name] ?? 0,
                dropped: (counts?.droppedOldest ?? 0) + (counts?.droppedNewest ?? 0) + (counts?.rejectedOversize ?? 0),
                health: state.health.state.rawValue, healthReason: state.health.reason)
        }
        return AgentStatus(
            agent: uplink.configuration.agentID, version: version, pid: Int(getpid()),
            uptimeSeconds: (ContinuousClock.now - startedAt).seconds, now: Self.seconds(now),
            ready: isReady(requireStream: false),
            stream: AgentStatus.Stream(
                collectorURL: uplink.configuration.url, state: stream.state.rawValue,
                stateSince: stream.stateSince > 0 ? Self.seconds(stream.stateSince) : nil,
                compression: stream.compression.contentEncoding ?? "identity",
                connectionAttempts: stream.connectionAttempts, failures: stream.failures,
                lastError: stream.lastFailure.map { failure in
                    stream.lastRejectionDetail.map { "\(failure) (\($0))" } ?? "\(failure)"
                },
                lastErrorAt: stream.lastFailureTime.map(Self.seconds),
                acknowledged: stream.acknowledged, lastSent: stream.lastSent, recordsSent: stream.recordsWritten,
                bytesSent: stream.bytesWritten, lineBytes: stream.lineBytesWritten),
            buffer: AgentStatus.Buffer(
                capacityBytes: ring.capacity, usedBytes: ring.usedBytes, residentBytes: agent.ring.residentBytes(),
                frames: ring.retainedFrames,
                unsentFrames: ring.unsentFrames, oldestUnacknowledgedAgeSeconds: Self.age(ofFramePrefix: ring.oldestFramePrefix, now: now),
                diskBytes: agent.ring.persistentStatistics().map(\.diskBytes)),
            sources: sources,
            // Off (the usual case for a box without remote configuration): nothing to show.
            remoteConfig: (agent.remoteConfigStatus.withLock { $0 }?()).flatMap { $0.state == .disabled ? nil : $0 })
    }

    /// Seconds from the timestamp at the start of a frame (the oldest record held and not yet acknowledged) to
    /// `now`; nil without a frame or a timestamp.
    static func age(ofFramePrefix prefix: [UInt8]?, now: Int64) -> Double? {
        guard let prefix, let timestamp = NDJSONFrameEncoder.timestamp(ofFramePrefix: prefix) else { return nil }
        return max(0, seconds(now &- timestamp))
    }

    static func seconds(_ nanoseconds: Int64) -> Double { Double(nanoseconds) / 1e9 }

    /// Adds the series read at scrape time to `exposition` (their help texts: `SeriesCatalog`, docs/metrics.md).
    func registerSeries(in exposition: MetricsExposition) -> ScrapeHook {
        let registry = exposition.registry
        let capacity = registry.gauge("uplink_ring_capacity_bytes")
        let resident = registry.gauge("uplink_ring_resident_bytes")
        let frames = registry.gauge("uplink_ring_frames")
        let unsent = registry.gauge("uplink_ring_unsent_frames")
        let oldest = registry.gauge("uplink_oldest_unacknowledged_age_seconds")
        let inFlight = registry.gauge("uplink_unacknowledged_sent_frames")
        let up = registry.gauge("uplink_stream_up")
        let states = Dictionary(
            uniqueKeysWithValues: UplinkStreamState.allCases.map { state in
                (state, registry.gauge("uplink_stream_state", labels: [("state", state.rawValue)]))
            })
        let started = registry.gauge("uplink_start_time_seconds")
        started.record(Self.seconds(WallClock.nowNanoseconds()) - (ContinuousClock.now - startedAt).seconds)
        let sourcesRunning = registry.gauge("uplink_sources_running")
        let sourcesEnded = registry.gauge("uplink_sources_ended")
        let sourcesFailing = registry.gauge("uplink_sources_failing")
        let remoteStates = Dictionary(
            uniqueKeysWithValues: RemoteConfigStatus.State.allCases.map { state in
                (state, registry.gauge("uplink_remote_config_state", labels: [("state", state.rawValue)]))
            })
        let counts = AgentCountSeries(exposition)
        return exposition.addScrapeHook { [self] in
            let ring = agent.ring.statistics(oldestPrefixBytes: NDJSONFrameEncoder.timestampPrefixBytes)
            let stream = agent.uplink.statistics()
            counts.update(ring: ring, totals: agent.uplinkHost.totals(), disk: agent.ring.persistentStatistics())
            capacity.record(Int64(ring.capacity))
            if let bytes = agent.ring.residentBytes() { resident.record(Int64(bytes)) }
            frames.record(Int64(ring.retainedFrames))
            unsent.record(Int64(ring.unsentFrames))
            oldest.record(Self.age(ofFramePrefix: ring.oldestFramePrefix, now: WallClock.nowNanoseconds()) ?? 0)
            inFlight.record(Int64(clamping: stream.lastSent > stream.acknowledged ? stream.lastSent - stream.acknowledged : 0))
            up.record(Int64(stream.state == .streaming ? 1 : 0))
            for (state, gauge) in states { gauge.record(Int64(state == stream.state ? 1 : 0)) }
            let sources = agent.sourceSupervisor.sourceStates
            sourcesRunning.record(Int64(sources.filter { $0.started && !$0.ended }.count))
            sourcesEnded.record(Int64(sources.filter(\.ended).count))
            sourcesFailing.record(Int64(sources.filter { $0.health.state == .failing }.count))
            let remote = agent.remoteConfigStatus.withLock { $0 }?()
            for (state, gauge) in remoteStates { gauge.record(Int64(remote?.state == state ? 1 : 0)) }
        }
    }
}

/// The agent's counts as `/metrics` series: records appended and dropped per source, the acknowledged sequence (the
/// ring's: it carries over a reload), the stream's totals across reloads, the persistent buffer's disk counts.
private final class AgentCountSeries: Sendable {
    private let exposition: MetricsExposition
    private let usedBytes: Gauge
    private let acknowledged: Gauge
    private let diskBytes: Gauge
    private let stream: [SnapshotCounter<UplinkTotals>]
    private let disk: [SnapshotCounter<PersistentBufferStatistics>]

    init(_ exposition: MetricsExposition) {
        self.exposition = exposition
        let registry = exposition.registry
        usedBytes = registry.gauge("uplink_ring_used_bytes")
        acknowledged = registry.gauge("uplink_acknowledged_sequence")
        diskBytes = registry.gauge("uplink_buffer_disk_bytes")
        stream = [
            exposition.counter("uplink_connection_attempts_total") { $0.connectionAttempts },
            exposition.counter("uplink_bytes_sent_total") { $0.bytesWritten },
            exposition.counter("uplink_line_bytes_total") { $0.lineBytesWritten },
            exposition.counter("uplink_records_sent_total") { $0.recordsWritten },
            exposition.counter("uplink_heartbeats_total") { $0.heartbeatsSent },
        ]
        let dropped = "uplink_records_dropped_total"
        disk = [
            exposition.counter("uplink_buffer_disk_written_bytes_total") { $0.bytesWritten },
            exposition.counter(dropped, labels: [("reason", "disk_budget_drop_oldest")]) { $0.framesDropped },
            exposition.counter(dropped, labels: [("reason", "disk_budget_drop_newest")]) { $0.framesRefused },
            exposition.counter("uplink_buffer_disk_corrupt_total") { $0.corruptRegions + $0.tornTails },
            exposition.counter("uplink_buffer_disk_write_errors_total") { $0.writeErrors },
        ]
    }

    func update(ring: RingStatistics, totals: UplinkTotals, disk persistent: PersistentBufferStatistics?) {
        usedBytes.record(Int64(ring.usedBytes))
        acknowledged.record(Int64(clamping: ring.acknowledged))
        for source in ring.sources {
            let name = ("source", source.name)
            let dropped = "uplink_records_dropped_total"
            exposition.counter("uplink_records_appended_total", labels: [name]).update(to: source.appended)
            exposition.counter(dropped, labels: [name, ("reason", "buffer_full_drop_oldest")])
                .update(to: source.droppedOldest)
            exposition.counter(dropped, labels: [name, ("reason", "buffer_full_drop_newest")])
                .update(to: source.droppedNewest)
            exposition.counter(dropped, labels: [name, ("reason", "larger_than_buffer")])
                .update(to: source.rejectedOversize)
        }
        for counter in stream { counter.update(from: totals) }
        for (reason, count) in totals.failuresByReason {
            exposition.counter("uplink_stream_failures_total", labels: [("reason", reason)]).update(to: count)
        }
        if let persistent {
            for counter in disk { counter.update(from: persistent) }
            diskBytes.record(Int64(persistent.diskBytes))
        }
    }
}

/// Per-source record counts sampled every few seconds while the endpoint runs, so that the status can say how many
/// records per second each source produced over the last minute.
final class SourceRateHistory: Sendable {
    /// How often `sample` should be called; and the window the rates cover.
    static let interval = Duration.seconds(5)
    static let window = Duration.seconds(60)

    private struct Sample {
        let at: ContinuousClock.Instant
        let counts: [String: Int]
    }
    private let samples = Mutex<[Sample]>([])

    /// Remembers the counts now, forgetting samples older than the window (keeping one at or beyond it).
    func sample(_ sources: [RingStatistics.SourceCounts], now: ContinuousClock.Instant) {
        let counts = Dictionary(sources.map { ($0.name, $0.appended) }, uniquingKeysWith: { _, last in last })
        samples.withLock { samples in
            samples.append(Sample(at: now, counts: counts))
            while samples.count > 1, now - samples[1].at >= Self.window { samples.removeFirst() }
        }
    }

    /// Records per second per source: from the oldest sample within the window (about a minute back), or over the
    /// whole uptime before there is one.
    func recordsPerSecond(
        current: [RingStatistics.SourceCounts], now: ContinuousClock.Instant, startedAt: ContinuousClock.Instant
    ) -> [String: Double] {
        let base = samples.withLock { $0.first }
        let since = base?.at ?? startedAt
        let elapsed = (now - since).seconds
        guard elapsed > 0 else { return [:] }
        var rates: [String: Double] = [:]
        for source in current {
            let before = base?.counts[source.name] ?? 0
            rates[source.name] = Double(max(0, source.appended - before)) / elapsed
        }
        return rates
    }
}

extension AgentStatus {
    /// Encodes a status as `/v1/status` serves it: snake_case keys, sorted.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    /// Decodes what `encoder()` wrote.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return decoder
    }
}
