import UplinkCore

/// The write-ahead log's segments and retention (docs/architecture.md, "The collector's log").
public struct CollectorLogSettings: Sendable, Equatable {
    /// A segment is closed and a new one started once it holds this many bytes. Default 64 MiB.
    public var segmentBytes: Int64
    /// A segment is closed and a new one started once it is this old (at its next write). Default 1 hour.
    public var segmentAge: Duration
    /// Most bytes the log keeps (`collector.retention.max_bytes`). Closed segments beyond it are deleted, oldest
    /// first, even when a sink has not forwarded them yet: those records are lost for that sink, logged at error
    /// level and counted (`SinkStatistics.recordsLost`). Default 10 GiB.
    public var retentionBytes: Int64
    /// Oldest closed segment kept, by its last write (`collector.retention.max_age`); older ones are deleted like
    /// those beyond `retentionBytes`. Default 7 days.
    public var retentionAge: Duration

    /// Creates the settings; every parameter has the default documented on its property.
    public init(
        segmentBytes: Int64 = 64 << 20, segmentAge: Duration = .seconds(3600), retentionBytes: Int64 = 10 << 30,
        retentionAge: Duration = .seconds(7 * 86400)
    ) {
        self.segmentBytes = segmentBytes
        self.segmentAge = segmentAge
        self.retentionBytes = retentionBytes
        self.retentionAge = retentionAge
    }

    func check() throws(CollectorError) {
        func invalid(_ message: String) -> CollectorError { CollectorError(code: "invalid_configuration", message: message) }
        guard segmentBytes >= 1 else { throw invalid("log segment bytes must be at least 1") }
        guard segmentAge > .zero, retentionAge > .zero else { throw invalid("log ages must be longer than zero") }
        guard retentionBytes >= 1 else { throw invalid("retention max_bytes must be at least 1") }
    }
}

/// The kinds of sink (`collector.sinks[].type`). Adding one: a folder `Sinks/<Kind>/` with a type conforming to
/// `ForwardingSink`, a case here and its line in `SinkRegistry.make`.
public enum SinkKind: String, Sendable, Equatable, CaseIterable {
    /// Appends the stored lines to a file (`path`).
    case jsonl
    /// Prints one readable line per record to standard output.
    case stdout
    /// Metric records into VictoriaMetrics' `/api/v1/import`.
    case victoriametrics
    /// Log records (and optionally metrics) into ClickHouse over its HTTP interface.
    case clickhouse
    /// NDJSON batches POSTed to a URL.
    case http
}

/// How a sink encodes its request bodies (`collector.sinks[].compression`).
public enum SinkCompression: String, Sendable, Equatable, CaseIterable {
    /// Bodies as they are.
    case none
    /// `Content-Encoding: gzip` (zlib level 1). VictoriaMetrics' import, ClickHouse's HTTP interface and most HTTP
    /// ingest endpoints accept it.
    case gzip

    /// The default of a sink kind: gzip for VictoriaMetrics (its samples compress about tenfold), none otherwise.
    public static func defaultFor(_ kind: SinkKind) -> SinkCompression {
        kind == .victoriametrics ? .gzip : .none
    }
}

/// One sink of `collector.sinks`: where a forwarder delivers the log's records, and how.
public struct SinkConfiguration: Sendable, Equatable {
    /// `name`: unique among the sinks, `[A-Za-z0-9._-]{1,64}`; names the sink's cursor and dead-letter files.
    public var name: String
    /// `type`.
    public var kind: SinkKind
    /// `batch_max_bytes`: a batch is sent once this many bytes of stored lines are waiting. Default 1 MiB.
    public var batchMaxBytes: Int
    /// `batch_linger`: a smaller batch is sent once its first record has waited this long. Default 1 s.
    public var batchLinger: Duration
    /// `backoff`: delays between retries after connection errors, timeouts, 5xx and 429. Default: the project's
    /// `Backoff()` (250 ms doubling up to 30 s, full jitter).
    public var backoff: Backoff
    /// `timeout`: longest a delivery request may take before it counts as failed (and is retried). Default 30 s.
    public var timeout: Duration
    /// `url` (victoriametrics, clickhouse, http): the store's base URL, e.g. `http://127.0.0.1:8428`.
    public var url: String?
    /// `path` (jsonl): the file lines are appended to. Default `<data_dir>/records.jsonl`.
    public var path: String?
    /// `headers` (http, victoriametrics, clickhouse): extra request headers, in order.
    public var headers: [HeaderField]
    /// `database` (clickhouse). Default `default`.
    public var database: String
    /// `table` (clickhouse): the logs table. Default `uplink_logs`.
    public var table: String
    /// `metrics_table` (clickhouse): when set, metric records go to this table too. Default: none.
    public var metricsTable: String?
    /// `user` (clickhouse). Default: none (the server's `default` user).
    public var user: String?
    /// `password` or `password_file` (clickhouse). Default: none.
    public var password: String?
    /// `create_table` (clickhouse): create the tables at start when missing. Default `true`.
    public var createTable: Bool
    /// `compression` (victoriametrics, clickhouse, http): request body encoding. Default `gzip` for victoriametrics,
    /// `none` for the others (`SinkCompression.defaultFor`).
    public var compression: SinkCompression

    /// An HTTP header sent with every request of a sink.
    public struct HeaderField: Sendable, Equatable {
        public var name: String
        public var value: String
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// Creates a sink; every parameter has the default documented on its property.
    public init(
        name: String, kind: SinkKind, batchMaxBytes: Int = 1 << 20, batchLinger: Duration = .seconds(1),
        backoff: Backoff = Backoff(), timeout: Duration = .seconds(30), url: String? = nil, path: String? = nil,
        headers: [HeaderField] = [], database: String = "default", table: String = "uplink_logs",
        metricsTable: String? = nil, user: String? = nil, password: String? = nil, createTable: Bool = true,
        compression: SinkCompression? = nil
    ) {
        self.name = name
        self.kind = kind
        self.batchMaxBytes = batchMaxBytes
        self.batchLinger = batchLinger
        self.backoff = backoff
        self.timeout = timeout
        self.url = url
        self.path = path
        self.headers = headers
        self.database = database
        self.table = table
        self.metricsTable = metricsTable
        self.user = user
        self.password = password
        self.createTable = createTable
        self.compression = compression ?? SinkCompression.defaultFor(kind)
    }

    func check() throws(CollectorError) {
        func invalid(_ message: String) -> CollectorError {
            CollectorError(code: "invalid_configuration", message: "sink '\(name)': \(message)")
        }
        let allowed = name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                true
            default: false
            }
        }
        guard (1...64).contains(name.utf8.count), allowed, name != ".", name != ".." else {
            throw invalid("the name must be 1-64 characters of [A-Za-z0-9._-]")
        }
        guard batchMaxBytes >= 1 else { throw invalid("batch_max_bytes must be at least 1") }
        guard batchLinger >= .zero, timeout > .zero else { throw invalid("batch_linger and timeout must not be negative") }
        switch kind {
        case .victoriametrics, .clickhouse, .http:
            guard let url, url.hasPrefix("http://") || url.hasPrefix("https://") else {
                throw invalid("'url' must be an http:// or https:// URL")
            }
        case .jsonl, .stdout:
            break
        }
        if kind == .clickhouse {
            for identifier in [database, table] + (metricsTable.map { [$0] } ?? []) {
                guard ClickHouseSink.isIdentifier(identifier) else {
                    throw invalid("'\(identifier)' is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*)")
                }
            }
        }
    }
}
