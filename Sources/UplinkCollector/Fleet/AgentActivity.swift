/// One agent as the collector has seen it since it started: whether it streams now, what it sent, how far behind
/// it is, and how its current (or last) stream is connected. An agent that only made remote configuration requests
/// is here too, never connected, with `streamsOpened` 0. `Collector.agents()` lists them; `GET /v1/fleet`
/// serves the same values as JSON (docs/fleet.md).
///
/// Counts are cumulative since the agent entered the table (the collector's start, or its first stream after it was
/// evicted: see `FleetSnapshot.capacity`) and saturate at `UInt64.max` like `CollectorStatistics`. They cover
/// every epoch of the agent. Times are wall-clock nanoseconds since the Unix epoch (UTC).
public struct AgentActivity: Sendable, Equatable {
    /// The agent id (`Uplink-Agent`).
    public var agent: String
    /// Whether a stream of the agent is open now.
    public var connected: Bool
    /// When the agent's current stream opened (the collector's wall clock, ns since the Unix epoch); nil while it
    /// is disconnected.
    public var connectedSince: Int64?
    /// The last time the collector heard of the agent (ns since the Unix epoch): a received chunk of its body
    /// (records, heartbeats), its stream opening or closing, or a remote configuration request it made (an agent
    /// without a stream reports its status with `POST /v1/config/status` and asks for `GET /v1/config`). While it
    /// streams, heartbeats keep this recent.
    public var lastSeen: Int64
    /// Streams of the agent the collector accepted (`200`); more than one means it reconnected.
    public var streamsOpened: UInt64 = 0
    /// The epoch (`Uplink-Epoch`) of its current or last stream.
    public var epoch: UInt64 = 0
    /// Records stored (acknowledged).
    public var recordsStored: UInt64 = 0
    /// Records discarded because their sequence was at or below the mark (sent again after a reconnect).
    public var duplicatesDiscarded: UInt64 = 0
    /// Log records discarded because their origin offset was stored before (`ReceivedBatch.resent`): lines read
    /// and sent again after the agent restarted.
    public var resentDiscarded: UInt64 = 0
    /// Records missing in gaps of the sequence numbers: records the agent dropped (its buffer overflowed) or could
    /// not account for after a crash.
    public var recordsMissing: UInt64 = 0
    /// Lines rejected: malformed, cut off at the end of a request, or longer than `max_line_bytes`.
    public var rejectedLines: UInt64 = 0
    /// The `ts` of the last record stored (the one with the highest sequence number of the newest stored batch),
    /// as the agent stamped it: ns since the Unix epoch. `now − newestRecordTime` is how far behind the agent's
    /// stream is (its lag), as long as the agent's clock is right. Nil before a record was stored.
    public var newestRecordTime: Int64?
    /// The client certificate's subject of the current or last stream (`OpenStream.certificateSubject`, e.g.
    /// `CN=agent-1,O=Example`), at most `FleetTable.maximumIdentityBytes` bytes; nil without a client certificate.
    public var tlsIdentity: String?
    /// `HTTP/1.1` or `HTTP/2`: the protocol of the current or last stream.
    public var httpVersion: String?
    /// The peer address of the current or last stream (the address of a proxy when there is one in front).
    public var peer: String?
    /// Records stored per second over the last `FleetTable.historySeconds` complete seconds of the collector's
    /// monotonic clock, oldest first (the second in progress is not included). Each saturates at `UInt32.max`.
    public var recordsPerSecond: [UInt32] = []

    /// An agent with nothing counted, last seen at `lastSeen`.
    public init(agent: String, connected: Bool = false, lastSeen: Int64) {
        self.agent = agent
        self.connected = connected
        self.lastSeen = lastSeen
    }
}

/// The collector's fleet table at one moment: `Collector.fleet()`, and `GET /v1/fleet` as JSON.
public struct FleetSnapshot: Sendable, Equatable {
    /// The collector's wall clock when the snapshot was taken (ns since the Unix epoch): ages and lags are
    /// measured against it, not against the reader's clock.
    public var now: Int64
    /// How many agents the table keeps (4,096). A new agent beyond it evicts the disconnected agent seen least
    /// recently; agents with an open stream are never evicted, so the table holds more only while more than this
    /// many agents stream at once.
    public var capacity: Int
    /// Agents evicted so far to make room (saturating).
    public var agentsEvicted: UInt64
    /// Every agent in the table, sorted by agent id.
    public var agents: [AgentActivity]

    /// A snapshot of the given values.
    public init(now: Int64, capacity: Int, agentsEvicted: UInt64, agents: [AgentActivity]) {
        self.now = now
        self.capacity = capacity
        self.agentsEvicted = agentsEvicted
        self.agents = agents
    }
}
