import Synchronization
import UplinkWire

/// The high-water marks per stream, shared by all connections: read when a stream opens (its `resume`), raised by
/// the storage thread once a batch is in the log and the ledger.
///
/// It also holds the origin marks (highest stored offset per agent and log file incarnation, see
/// `StreamKey.origin`), kept per agent so a stream's open finds them at once. An agent keeps at most
/// `maximumOriginsPerAgent` of them: incarnations come and go with every rotation, and the ones raised longest
/// ago (files long finished) are forgotten first.
final class MarkTable: Sendable {
    /// Origin marks kept per agent. Pruning starts a little above, so it does not run on every new origin.
    static let maximumOriginsPerAgent = 4096
    private static let pruneSlack = 512

    private struct AgentOrigins {
        var offsets: [UInt64: UInt64] = [:]
        /// When each origin was last raised (a counter, not a time); 0 for origins loaded at start.
        var raisedAt: [UInt64: UInt64] = [:]
    }

    private struct State {
        var streams: [StreamKey: UInt64] = [:]
        var origins: [String: AgentOrigins] = [:]
        var generation: UInt64 = 0
    }

    private let state: Mutex<State>

    init(_ marks: [StreamKey: UInt64] = [:]) {
        self.state = Mutex(State())
        replaceAll(with: marks)
    }

    /// The stored high-water mark of `stream`, 0 when nothing is stored.
    func mark(for stream: StreamKey) -> UInt64 {
        state.withLock { $0.streams[stream] ?? 0 }
    }

    /// Raises each batch's stream mark to its `highestSequence` and its agent's origin marks to its `origins`, where
    /// they are higher. Origins are named by agent and id here: no `StreamKey.origin` key (a string concatenation
    /// and its hash per origin per batch) is built.
    func raise(_ batches: [CollectorBatch]) {
        state.withLock { state in
            for batch in batches {
                // One lookup of the key (an agent id's hash) for a known stream: this runs once per stored chunk.
                if let index = state.streams.index(forKey: batch.stream) {
                    if batch.highestSequence > state.streams.values[index] {
                        state.streams.values[index] = batch.highestSequence
                    }
                } else if batch.highestSequence > 0 {
                    state.streams[batch.stream] = batch.highestSequence
                }
                for (origin, offset) in batch.origins {
                    state.generation += 1
                    // In place: a copy taken out of the dictionary and stored back copied both of the agent's tables
                    // (up to thousands of origins) on every batch.
                    Self.raise(
                        &state.origins[batch.stream.agent, default: AgentOrigins()], origin: origin, to: offset,
                        at: state.generation)
                }
            }
        }
    }

    private static func raise(_ origins: inout AgentOrigins, origin: UInt64, to mark: UInt64, at generation: UInt64) {
        if mark > origins.offsets[origin] ?? 0 { origins.offsets[origin] = mark }
        origins.raisedAt[origin] = generation
        if origins.offsets.count > maximumOriginsPerAgent + pruneSlack { prune(&origins) }
    }

    private static func prune(_ origins: inout AgentOrigins) {
        let keep = origins.raisedAt.sorted { $0.value > $1.value }.prefix(maximumOriginsPerAgent).map(\.key)
        var offsets: [UInt64: UInt64] = [:]
        var raisedAt: [UInt64: UInt64] = [:]
        for id in keep {
            offsets[id] = origins.offsets[id]
            raisedAt[id] = origins.raisedAt[id]
        }
        origins = AgentOrigins(offsets: offsets, raisedAt: raisedAt)
    }

    func replaceAll(with newMarks: [StreamKey: UInt64]) {
        var fresh = State()
        for (key, mark) in newMarks {
            if let agent = key.originAgent {
                fresh.origins[agent, default: AgentOrigins()].offsets[key.epoch] = mark
                fresh.origins[agent, default: AgentOrigins()].raisedAt[key.epoch] = 0
            } else {
                fresh.streams[key] = mark
            }
        }
        state.withLock { $0 = fresh }
    }

    /// Every mark, origin marks under their `StreamKey.origin` keys (for the ledger).
    func snapshot() -> [StreamKey: UInt64] {
        state.withLock { state in
            var marks = state.streams
            for (agent, origins) in state.origins {
                for (id, offset) in origins.offsets { marks[StreamKey.origin(agent: agent, id: id)] = offset }
            }
            return marks
        }
    }

    /// The streams' marks without the origin marks.
    func streamMarks() -> [StreamKey: UInt64] {
        state.withLock { $0.streams }
    }

    /// The stored origin marks of `agent`: origin id → highest stored offset.
    func originMarks(agent: String) -> [UInt64: UInt64] {
        state.withLock { $0.origins[agent]?.offsets ?? [:] }
    }
}

/// Keeps `CollectorStatistics`: the one place each of these counts is kept (`/v1/status`, the fleet page and the
/// `/metrics` scrape hook all read `snapshot(marks:)`).
package final class StatisticsRecorder: Sendable {
    package init() {}

    private let statistics = Mutex(CollectorStatistics())

    /// Counts what a received chunk held (before it is stored).
    package func received(_ batch: ReceivedBatch) {
        statistics.withLock {
            $0.duplicatesDiscarded.addSaturating(batch.duplicates)
            $0.resentDiscarded.addSaturating(batch.resent)
            $0.heartbeats.addSaturating(batch.heartbeats)
            $0.gaps.addSaturating(UInt64(batch.gaps.count))
            $0.recordsMissing.addSaturating(batch.missing)
            $0.malformedLines.addSaturating(batch.malformed)
            $0.tooLongLines.addSaturating(batch.tooLong)
        }
    }

    func stored(_ count: Int) {
        statistics.withLock { $0.recordsStored.addSaturating(UInt64(count)) }
    }

    func streamOpened(replacing: Bool) {
        statistics.withLock {
            $0.streamsAccepted.addSaturating(1)
            if replacing { $0.streamsReplaced.addSaturating(1) }
            $0.activeStreams += 1
        }
    }

    func streamClosed() {
        statistics.withLock { $0.activeStreams -= 1 }
    }

    func streamRejected() {
        statistics.withLock { $0.streamsRejected.addSaturating(1) }
    }

    /// A stream's compressed body was refused: over the limits (a bomb, or a zstd window too large) or corrupt.
    func decompressionFailed(_ error: WireCompressionError) {
        statistics.withLock {
            if error.isResourceLimit {
                $0.decompressionBombs.addSaturating(1)
            } else {
                $0.corruptBodies.addSaturating(1)
            }
        }
    }

    func sinkError() {
        statistics.withLock { $0.sinkErrors.addSaturating(1) }
    }

    package func snapshot(marks: [StreamKey: UInt64]) -> CollectorStatistics {
        var snapshot = statistics.withLock { $0 }
        snapshot.marks = marks
        return snapshot
    }
}
