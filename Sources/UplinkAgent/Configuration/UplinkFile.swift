import UplinkConfig
import UplinkCore
import UplinkSources
import UplinkTransport
import UplinkWire

/// A YAML configuration file for `uplink`, decoded and validated. `docs/configuration.md` describes every key;
/// `examples.yaml` at the repository root is a complete annotated example (a test keeps it valid).
///
/// ```yaml
/// agent:     { id: gateway-7 }                      # optional
/// buffer:    { max_bytes: 64MiB }                   # optional
/// uplink:    { url: https://collector.example:4318, token_file: /etc/uplink/token }
/// sources:
///   - { name: cpu, type: cpu, interval: 10s }
/// collector: { listen: 127.0.0.1:4318 }             # optional; alone, the file configures only a collector
/// ```
///
/// Load with `UplinkFile.load(path:environment:collectorSection:)`, which reports every problem at once (the
/// `collector` section is decoded by the function you pass: UplinkCollector's); turn the result into what
/// `Agent` runs with `agentConfiguration(embedded:)`. The top-level keys are `agent`, `buffer`, `uplink`,
/// `sources`, `remote_config` and `collector`. `uplink` (with its `url`) and at least one source are required unless the file
/// configures only a collector (it has a `collector` section and neither `uplink` nor `sources`).
public struct UplinkFile: Sendable, Equatable {
    /// Path of the file it was loaded from (or the name given to `decode`).
    public var path: String
    /// `agent`: the agent's identity and state.
    public var agent: AgentSection
    /// `buffer`: the circular buffer between sources and uplink.
    public var buffer: BufferSection
    /// `uplink`: where records go and how the stream is kept healthy.
    public var uplink: UplinkSection
    /// `sources`: what the agent samples, in file order.
    public var sources: [AgentConfiguration.NamedSource]
    /// `remote_config`: whether and within what limits the collector may add sources (`RemoteConfigSection`).
    public var remoteConfig: RemoteConfigSection
    /// `collector`: the section as written, when the file has one (it may be written as just `collector:` to take
    /// every default). UplinkCollector decodes it (`load`'s `collectorSection`); the agent only notices a change.
    public var collector: ConfigNode?
    /// Whether the file configures an agent (it has `uplink` or `sources`). False for a collector-only file.
    public var configuresAgent: Bool

    public init(
        path: String, agent: AgentSection = AgentSection(), buffer: BufferSection = BufferSection(),
        uplink: UplinkSection = UplinkSection(), sources: [AgentConfiguration.NamedSource] = [],
        remoteConfig: RemoteConfigSection = RemoteConfigSection(), collector: ConfigNode? = nil, configuresAgent: Bool = true
    ) {
        self.path = path
        self.agent = agent
        self.buffer = buffer
        self.uplink = uplink
        self.sources = sources
        self.remoteConfig = remoteConfig
        self.collector = collector
        self.configuresAgent = configuresAgent
    }

    /// The top-level keys.
    static let keys = ["agent", "buffer", "uplink", "sources", "remote_config", "collector"]

    // MARK: - agent

    /// The `agent` section.
    public struct AgentSection: Sendable, Equatable {
        /// `agent.id` (string): this agent's id, sent with every stream (`Uplink-Agent` header) and recorded with
        /// every record by the collector. Printable characters without spaces, at most 255 bytes.
        /// Default: the machine's host name (`"uplink-agent"` if it cannot be read).
        public var id: String
        /// `agent.state_dir` (path): directory for the agent's own state. Default `"/var/lib/uplink"`.
        /// Holds the log tailer's checkpoints and, by default, the persistent buffer (`buffer.persist`).
        public var stateDirectory: String
        /// `agent.metrics_listen` (`host:port`): where the agent serves `/metrics` (Prometheus), `/healthz`,
        /// `/readyz` and `/v1/status` (what `uplink status` reads). Default: none (nothing listens). Use a loopback
        /// address unless a scraper elsewhere needs it: the endpoint has no authentication.
        public var metricsListen: ConfigHostPort?

        public init(
            id: String = AgentConfiguration.hostName(), stateDirectory: String = "/var/lib/uplink",
            metricsListen: ConfigHostPort? = nil
        ) {
            self.id = id
            self.stateDirectory = stateDirectory
            self.metricsListen = metricsListen
        }

        static let keys = ["id", "state_dir", "metrics_listen"]
    }

    // MARK: - buffer

    /// The `buffer` section.
    public struct BufferSection: Sendable, Equatable {
        /// `buffer.max_bytes` (size, e.g. `64MiB`): capacity of the circular buffer holding records until the
        /// collector acknowledges them, allocated at start. At least `4KiB`, at most `ConfigLimits.sizeCeiling`
        /// (`16GiB`, or the physical memory when that is less). Default `64MiB`.
        public var maxBytes: Int
        /// `buffer.overflow` (`drop_oldest` or `drop_newest`): what a full buffer does with a new record: drop the
        /// oldest records to make room, or refuse the new one. Drops are counted per source. Default `drop_oldest`.
        public var overflow: OverflowPolicy
        /// `buffer.persist` (mapping): keep buffered records on disk across restarts and outages (see
        /// `PersistSection`). Default: none.
        public var persist: PersistSection?

        public init(
            maxBytes: Int = RecordRing.defaultCapacity, overflow: OverflowPolicy = .dropOldest,
            persist: PersistSection? = nil
        ) {
            self.maxBytes = maxBytes
            self.overflow = overflow
            self.persist = persist
        }

        static let keys = ["max_bytes", "overflow", "persist"]
        /// Smallest `max_bytes` accepted.
        public static let minimumBytes = 4 * 1024
    }

    // MARK: - uplink

    /// The `uplink` section.
    public struct UplinkSection: Sendable, Equatable {
        /// Where the uplink sends records.
        public enum Target: Sendable, Equatable {
            /// `url: embedded`: a collector started inside the agent's process, on loopback.
            case embedded
            /// `url: http(s)://…`: the base URL of a collector; the stream goes to `<url>/v1/stream`.
            case url(String)
        }

        /// `uplink.url` (URL or `embedded`, required in an agent configuration): the collector's base URL,
        /// `http://` or `https://` with a host and an optional port and path (no query, fragment or credentials);
        /// or `embedded` for an in-process collector that the `collector` section configures.
        /// Default (collector-only files): `embedded`.
        public var target: Target
        /// `uplink.token` (string) or `uplink.token_file` (path of a file holding it, trimmed; relative to the
        /// configuration file's directory): the bearer token sent as `Authorization: Bearer <token>`.
        /// Default: none (with `url: embedded`, the collector's token if it has one).
        public var token: String?
        /// `uplink.backoff` (mapping): reconnect delays, exponential with full jitter:
        /// - `initial` (duration > 0): ceiling of the first delay. Default `250ms`.
        /// - `multiplier` (number ≥ 1): growth of the ceiling per failed attempt. Default `2`.
        /// - `max` (duration ≥ `initial`): largest ceiling. Default `30s`.
        /// - `reset_after` (duration > 0): how long a stream must stay healthy before delays start over. Default `30s`.
        public var backoff: Backoff
        /// `uplink.heartbeat` (duration > 0): a heartbeat line is sent after this long without any other line, so
        /// proxies do not close an idle stream. Default `15s`.
        public var heartbeat: Duration
        /// `uplink.stall_timeout` (duration > 0): the stream counts as broken (and is reconnected) when records are
        /// outstanding and no acknowledgement came for this long, when the stream had no room for this long, or when
        /// the collector did not answer this long after connecting. Default `30s`.
        public var stallTimeout: Duration
        /// `uplink.connect_timeout` (duration > 0, at most `5m`): how long one connection attempt may take, name
        /// resolution, TCP connect, the proxy's `CONNECT` and the TLS handshake together. A refused connection fails
        /// the attempt at once; this bounds one that gets no answer. Every attempt, failed or not, is followed by a
        /// `backoff` delay. `stall_timeout` bounds an attempt too, so the smaller of the two applies. Default `5s`.
        public var connectTimeout: Duration
        /// `uplink.stream_buffer` (size ≥ `1KiB`): capacity of the pipe between the buffer and the HTTP body.
        /// Default `64KiB`.
        public var streamBufferBytes: Int
        /// `uplink.linger` (duration, `0s` to `1m`): a latency budget for the log readers (`tail`). With `1s`, a
        /// tailer woken by a write waits 1 s before it reads, so what arrived meanwhile is read, encoded, compressed and
        /// sent in one pass (one wake-up for many lines). A backlog is read at once, so bulk throughput does not change,
        /// and no line waits longer than the budget before it is read. Default `0s`: read and sent as it arrives.
        public var linger: Duration
        /// `uplink.drain_timeout` (duration ≥ 0): on shutdown, how long to keep streaming until everything buffered
        /// is acknowledged; a stream still opening is waited for within it. Default `5s`.
        public var drainTimeout: Duration
        /// `uplink.compression` (`zstd`, `gzip` or `none`): how the stream's body is compressed (`Content-Encoding`),
        /// with one compressor context per stream flushed at the end of every write pass. A collector that does not
        /// accept it answers `415`, and the uplink falls back to `none` (logged once). Default `zstd`.
        public var compression: WireCompression
        /// `uplink.tls` (mapping, only with an `https://` URL): trust, client certificate (mTLS), server name and
        /// minimum version; see `UplinkTLS` for each key (`ca_file`, `use_system_trust`, `cert_file`, `key_file`,
        /// `server_name`, `min_version`). Relative paths are resolved against the configuration file's directory;
        /// every file is read and checked when the configuration is loaded. Default: none (the system trust store,
        /// or `SSL_CERT_FILE`/`SSL_CERT_DIR`; TLS 1.2 or later; no client certificate).
        public var tls: UplinkTLS?
        /// `uplink.proxy` (`http://[user:password@]host:port` or `none`): the HTTP proxy to tunnel through with
        /// CONNECT, or `none` for a direct connection whatever the environment says. Default (absent): the
        /// `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` environment variables (`ProxyEnvironment`).
        public var proxy: ProxySetting

        public init(
            target: Target = .embedded, token: String? = nil, backoff: Backoff = Backoff(),
            heartbeat: Duration = .seconds(15), stallTimeout: Duration = .seconds(30),
            connectTimeout: Duration = UplinkConfiguration.defaultConnectTimeout,
            streamBufferBytes: Int = BoundStreamPair.defaultCapacity, linger: Duration = .zero,
            drainTimeout: Duration = .seconds(5),
            tls: UplinkTLS? = nil, proxy: ProxySetting = .environment,
            compression: WireCompression = UplinkConfiguration.defaultCompression
        ) {
            self.target = target
            self.token = token
            self.backoff = backoff
            self.heartbeat = heartbeat
            self.stallTimeout = stallTimeout
            self.connectTimeout = connectTimeout
            self.streamBufferBytes = streamBufferBytes
            self.linger = linger
            self.drainTimeout = drainTimeout
            self.tls = tls
            self.proxy = proxy
            self.compression = compression
        }

        /// The value of `uplink.proxy`.
        public enum ProxySetting: Sendable, Equatable {
            /// Absent: follow `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY`.
            case environment
            /// `none`: always connect directly.
            case none
            /// A proxy URL.
            case proxy(UplinkProxy)
        }

        static let keys = [
            "url", "token", "token_file", "backoff", "heartbeat", "stall_timeout", "connect_timeout", "stream_buffer",
            "linger", "drain_timeout", "tls", "proxy", "compression",
        ]
        static let tlsKeys = ["ca_file", "use_system_trust", "cert_file", "key_file", "server_name", "min_version"]
        /// Largest `connect_timeout` accepted: 5 minutes (Linux itself gives up on an unanswered connect after about
        /// two).
        public static let maximumConnectTimeout: Duration = .seconds(300)
        /// Largest `linger` accepted: a minute (a longer budget only delays data and hides a stalled source).
        public static let maximumLinger: Duration = .seconds(60)
        /// Smallest `stream_buffer` accepted.
        public static let minimumStreamBufferBytes = 1024
    }
}
