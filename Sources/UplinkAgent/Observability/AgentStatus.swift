/// What a running agent says about itself at `GET /v1/status` and what `uplink status` prints. Times are seconds
/// since the Unix epoch; ages and durations are seconds. In JSON the keys are snake_case (`AgentStatus.encoder`).
public struct AgentStatus: Codable, Sendable, Equatable {
    /// `agent.id`.
    public var agent: String
    /// The agent's version (`uplink --version`).
    public var version: String
    /// The agent's process id.
    public var pid: Int
    /// Seconds since the agent started.
    public var uptimeSeconds: Double
    /// When this status was taken.
    public var now: Double
    /// Sources started (`/readyz`).
    public var ready: Bool
    /// The stream to the collector.
    public var stream: Stream
    /// The circular buffer.
    public var buffer: Buffer
    /// Every running source, in configuration order.
    public var sources: [Source]
    /// The remote configuration (`remote_config`), when enabled; nil otherwise and from older agents.
    public var remoteConfig: RemoteConfigStatus? = nil

    /// The stream to the collector.
    public struct Stream: Codable, Sendable, Equatable {
        /// The collector's base URL (`uplink.url`; the embedded collector's address for `embedded`).
        public var collectorURL: String
        /// `connecting`, `streaming`, `backing_off`, `draining` or `stopped`.
        public var state: String
        /// When the stream entered `state`.
        public var stateSince: Double?
        /// The body's `Content-Encoding`: `zstd`, `gzip` or `identity`.
        public var compression: String
        /// Connection attempts since start.
        public var connectionAttempts: Int
        /// Streams given up since start (each is followed by a reconnect).
        public var failures: Int
        /// Why the last stream was given up, if one was.
        public var lastError: String?
        /// When it was given up.
        public var lastErrorAt: Double?
        /// Highest sequence the collector acknowledged.
        public var acknowledged: UInt64
        /// Highest sequence written to the stream.
        public var lastSent: UInt64
        /// Records written to streams since start (resent ones count again).
        public var recordsSent: Int
        /// Body bytes sent (compressed).
        public var bytesSent: Int
        /// Record and heartbeat line bytes before compression.
        public var lineBytes: Int

        // The snake-case key strategies map `collectorUrl`, not `collectorURL`, to and from `collector_url`.
        enum CodingKeys: String, CodingKey {
            case collectorURL = "collectorUrl"
            case state, stateSince, compression, connectionAttempts, failures, lastError, lastErrorAt, acknowledged
            case lastSent, recordsSent, bytesSent, lineBytes
        }
    }

    /// The circular buffer: what is not yet acknowledged.
    public struct Buffer: Codable, Sendable, Equatable {
        /// `buffer.max_bytes`.
        public var capacityBytes: Int
        /// Bytes held: frames not yet acknowledged, with their 8-byte headers.
        public var usedBytes: Int
        /// Memory the buffer's storage holds now (its pages in RAM, as the kernel reports them); nil where the
        /// system cannot tell. Follows the backlog: a few MiB while the collector keeps up, up to the capacity in an
        /// outage.
        public var residentBytes: Int?
        /// Frames held in memory (not yet acknowledged).
        public var frames: Int
        /// Frames not yet sent.
        public var unsentFrames: Int
        /// Age of the oldest record not yet acknowledged (from its own timestamp); nil when nothing waits.
        public var oldestUnacknowledgedAgeSeconds: Double?
        /// Bytes in the persistent buffer's segment files (`buffer.persist`), else nil.
        public var diskBytes: Int?
    }

    /// One source.
    public struct Source: Codable, Sendable, Equatable {
        /// `sources[].name`.
        public var name: String
        /// `sources[].type`.
        public var kind: String
        /// `running`, `starting` or `ended` (the source returned or failed; its log line says why).
        public var state: String
        /// Records it produced since start.
        public var records: Int
        /// Records per second over the last minute (over the uptime while the agent is younger).
        public var recordsPerSecond: Double
        /// Records dropped because the buffer was full (`drop_oldest` evictions and `drop_newest` refusals) or
        /// larger than the whole buffer.
        public var dropped: Int
        /// What the source reports (`SourceHealth.State`): `starting`, `healthy`, `idle` or `failing`; nil from an
        /// agent older than the field.
        public var health: String?
        /// Why it is `idle` or `failing`.
        public var healthReason: String?

        public init(
            name: String, kind: String, state: String, records: Int, recordsPerSecond: Double, dropped: Int,
            health: String? = nil, healthReason: String? = nil
        ) {
            self.name = name
            self.kind = kind
            self.state = state
            self.records = records
            self.recordsPerSecond = recordsPerSecond
            self.dropped = dropped
            self.health = health
            self.healthReason = healthReason
        }
    }
}
