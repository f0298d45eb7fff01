/// Identifies one agent's stream of sequence numbers: the agent id and its epoch.
public struct StreamKey: Hashable, Sendable, CustomStringConvertible {
    /// The agent id (`Uplink-Agent`): 1-128 bytes of `[A-Za-z0-9._:-]`.
    public var agent: String
    /// The stream epoch (`Uplink-Epoch`).
    public var epoch: UInt64

    /// Identifies the stream of `agent` in `epoch`.
    public init(agent: String, epoch: UInt64) {
        self.agent = agent
        self.epoch = epoch
    }

    /// `agent/epoch`.
    public var description: String { "\(agent)/\(epoch)" }

    /// The key under which the collector keeps the highest stored offset of one origin of `agent` (a log file
    /// incarnation, docs/protocol.md "Origins"). Origin marks share the mark table and the marks ledger with the
    /// streams: the agent part is `<agent>/origin` (a `/` never occurs in an agent id, so they cannot collide),
    /// the origin id takes the epoch's place and the offset the mark's.
    static func origin(agent: String, id: UInt64) -> StreamKey {
        StreamKey(agent: agent + originSuffix, epoch: id)
    }

    static let originSuffix = "/origin"

    /// Whether this key holds an origin mark rather than a stream's.
    var isOrigin: Bool { agent.hasSuffix(Self.originSuffix) }

    /// For an origin mark's key, the agent it belongs to; nil for a stream's key.
    var originAgent: String? { isOrigin ? String(agent.dropLast(Self.originSuffix.count)) : nil }
}

/// Counts since the collector started (marks: since the data directory was created).
///
/// `/metrics` reads these counts when scraped (`uplink_collector_*`); they are kept nowhere else. Counts saturate
/// at `UInt64.max` rather than wrap or trap: what agents send decides some of them (a gap's size is the difference
/// of two sequence numbers), so no input can make a count crash the collector.
public struct CollectorStatistics: Sendable, Equatable {
    /// Records accepted and stored in the log (`uplink_collector_records_stored_total`).
    public var recordsStored: UInt64 = 0
    /// Records discarded because their sequence was at or below the mark (`uplink_collector_duplicates_total`).
    public var duplicatesDiscarded: UInt64 = 0
    /// Records discarded because their origin offset was stored before: log lines an agent read and sent again
    /// after it restarted without having seen their acknowledgement (`uplink_collector_resent_total`).
    public var resentDiscarded: UInt64 = 0
    /// Gaps seen: a record whose sequence was more than one above the mark (`uplink_collector_gaps_total`).
    public var gaps: UInt64 = 0
    /// Records missing in those gaps, i.e. dropped by agents (`uplink_collector_missing_total`).
    public var recordsMissing: UInt64 = 0
    /// Lines that were not valid records or heartbeats, including lines cut off at the end of a request
    /// (`uplink_collector_malformed_lines_total`).
    public var malformedLines: UInt64 = 0
    /// Lines longer than `maxLineBytes` (`uplink_collector_too_long_lines_total`).
    public var tooLongLines: UInt64 = 0
    /// Heartbeat lines received (`uplink_collector_heartbeats_total`).
    public var heartbeats: UInt64 = 0
    /// Streams open now (`uplink_collector_active_streams`).
    public var activeStreams: Int = 0
    /// Streams accepted with `200` (`uplink_collector_streams_total`).
    public var streamsAccepted: UInt64 = 0
    /// Streams ended because a newer connection of the same agent arrived (`uplink_collector_streams_replaced_total`).
    public var streamsReplaced: UInt64 = 0
    /// Requests to `/v1/stream` refused with a `4xx` or `503`, or dropped because their connection ended before the
    /// stream could start (`uplink_collector_streams_rejected_total`).
    public var streamsRejected: UInt64 = 0
    /// Failed writes to the rejects file (`uplink_collector_sink_errors_total`); a sink's failed deliveries are its
    /// `SinkStatistics.retries`.
    public var sinkErrors: UInt64 = 0
    /// Streams ended because their compressed body decoded to more than the collector allows per chunk, or asked
    /// for a zstd window above 8 MiB (`uplink_collector_decompression_bombs_total`; docs/protocol.md, "Compression").
    public var decompressionBombs: UInt64 = 0
    /// Streams ended because their compressed body was not valid for its `Content-Encoding`
    /// (`uplink_collector_corrupt_bodies_total`).
    public var corruptBodies: UInt64 = 0
    /// The high-water mark per agent and epoch: the highest sequence stored.
    public var marks: [StreamKey: UInt64] = [:]

    /// All counts zero, no marks.
    public init() {}
}

extension UInt64 {
    /// Adds `amount`, stopping at `UInt64.max` instead of overflowing: for counts that input decides.
    mutating func addSaturating(_ amount: UInt64) {
        let (sum, overflow) = addingReportingOverflow(amount)
        self = overflow ? .max : sum
    }
}
