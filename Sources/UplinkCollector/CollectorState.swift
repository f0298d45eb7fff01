import Metrics
import Synchronization

/// The high-water marks per stream, shared by all connections: read when a stream opens (its `resume`), raised by
/// the storage thread once a batch is in the sinks and the ledger.
final class MarkTable: Sendable {
    private let marks: Mutex<[StreamKey: UInt64]>

    init(_ marks: [StreamKey: UInt64] = [:]) {
        self.marks = Mutex(marks)
    }

    /// The stored high-water mark of `stream`, 0 when nothing is stored.
    func mark(for stream: StreamKey) -> UInt64 {
        marks.withLock { $0[stream] ?? 0 }
    }

    func raise(_ entries: [(StreamKey, UInt64)]) {
        marks.withLock { marks in
            for (stream, mark) in entries where mark > marks[stream] ?? 0 { marks[stream] = mark }
        }
    }

    func replaceAll(with newMarks: [StreamKey: UInt64]) {
        marks.withLock { $0 = newMarks }
    }

    func snapshot() -> [StreamKey: UInt64] {
        marks.withLock { $0 }
    }

    /// The streams' marks without the origin marks.
    func streamMarks() -> [StreamKey: UInt64] {
        marks.withLock { $0.filter { !$0.key.isOrigin } }
    }

    /// The stored origin marks of `agent`: origin id → highest stored offset.
    func originMarks(agent: String) -> [UInt64: UInt64] {
        let originAgent = agent + StreamKey.originSuffix
        return marks.withLock { marks in
            var origins: [UInt64: UInt64] = [:]
            for (key, offset) in marks where key.agent == originAgent { origins[key.epoch] = offset }
            return origins
        }
    }
}

/// Keeps `CollectorStatistics` and reports the same counts through swift-metrics.
final class StatisticsRecorder: Sendable {
    private let statistics = Mutex(CollectorStatistics())
    private let recordsStored = Counter(label: "uplink_collector_records_stored_total")
    private let duplicates = Counter(label: "uplink_collector_duplicates_total")
    private let resent = Counter(label: "uplink_collector_resent_total")
    private let gaps = Counter(label: "uplink_collector_gaps_total")
    private let missing = Counter(label: "uplink_collector_missing_total")
    private let malformed = Counter(label: "uplink_collector_malformed_lines_total")
    private let tooLong = Counter(label: "uplink_collector_too_long_lines_total")
    private let heartbeats = Counter(label: "uplink_collector_heartbeats_total")
    private let streamsAccepted = Counter(label: "uplink_collector_streams_total")
    private let streamsReplaced = Counter(label: "uplink_collector_streams_replaced_total")
    private let streamsRejected = Counter(label: "uplink_collector_streams_rejected_total")
    private let sinkErrors = Counter(label: "uplink_collector_sink_errors_total")
    private let activeStreams = Gauge(label: "uplink_collector_active_streams")

    /// Counts what a received chunk held (before it is stored).
    func received(_ batch: ReceivedBatch) {
        let (gapCount, missingCount) = (UInt64(batch.gaps.count), batch.missing)
        let (malformedCount, tooLongCount) = (batch.malformed, batch.tooLong)
        statistics.withLock {
            $0.duplicatesDiscarded += batch.duplicates
            $0.resentDiscarded += batch.resent
            $0.heartbeats += batch.heartbeats
            $0.gaps += gapCount
            $0.recordsMissing += missingCount
            $0.malformedLines += malformedCount
            $0.tooLongLines += tooLongCount
        }
        Self.add(batch.duplicates, to: duplicates)
        Self.add(batch.resent, to: resent)
        Self.add(batch.heartbeats, to: heartbeats)
        Self.add(gapCount, to: gaps)
        Self.add(missingCount, to: missing)
        Self.add(malformedCount, to: malformed)
        Self.add(tooLongCount, to: tooLong)
    }

    func stored(_ count: Int) {
        statistics.withLock { $0.recordsStored += UInt64(count) }
        Self.add(UInt64(count), to: recordsStored)
    }

    func streamOpened(replacing: Bool) {
        let active = statistics.withLock {
            $0.streamsAccepted += 1
            if replacing { $0.streamsReplaced += 1 }
            $0.activeStreams += 1
            return $0.activeStreams
        }
        streamsAccepted.increment()
        if replacing { streamsReplaced.increment() }
        activeStreams.record(active)
    }

    func streamClosed() {
        let active = statistics.withLock {
            $0.activeStreams -= 1
            return $0.activeStreams
        }
        activeStreams.record(active)
    }

    func streamRejected() {
        statistics.withLock { $0.streamsRejected += 1 }
        streamsRejected.increment()
    }

    func sinkError() {
        statistics.withLock { $0.sinkErrors += 1 }
        sinkErrors.increment()
    }

    func snapshot(marks: [StreamKey: UInt64]) -> CollectorStatistics {
        var snapshot = statistics.withLock { $0 }
        snapshot.marks = marks
        return snapshot
    }

    private static func add(_ count: UInt64, to counter: Counter) {
        if count > 0 { counter.increment(by: Int64(clamping: count)) }
    }
}
