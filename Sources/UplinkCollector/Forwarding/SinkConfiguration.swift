import UplinkConfig
import UplinkCore

/// The write-ahead log's segments and retention (docs/architecture.md, "The collector's log").
public struct CollectorLogSettings: Sendable, Equatable {
    /// `collector.log.segment_bytes` (size ≥ `1KiB` in a file): a segment is closed and a new one started once it
    /// holds this many bytes. Default 64 MiB.
    public var segmentBytes: Int64
    /// `collector.log.segment_age` (duration > 0): a segment is closed and a new one started once it is this old
    /// (at its next write). Default 1 hour.
    public var segmentAge: Duration
    /// `collector.retention.max_bytes` (size ≥ `1KiB` in a file): most bytes the log keeps. Closed segments beyond
    /// it are deleted, oldest first, even when a sink has not forwarded them yet: those records are lost for that
    /// sink, logged at error level and counted (`SinkStatistics.recordsLost`). Default 10 GiB.
    public var retentionBytes: Int64
    /// `collector.retention.max_age` (duration > 0): oldest closed segment kept, by its last write; older ones are
    /// deleted like those beyond `retentionBytes`. Default 7 days.
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

/// One sink of `collector.sinks`: where a forwarder delivers the log's records, and how. The keys every sink has
/// are here; `kind` holds the `type` and the keys of that type.
public struct SinkConfiguration: Sendable, Equatable {
    /// `name` (required, `[A-Za-z0-9._-]{1,64}`, unique among the sinks): names the sink's cursor and dead-letter
    /// files, and its log lines.
    public var name: String
    /// `type` and the type's own keys.
    public var kind: any SinkKindConfig
    /// `batch_max_bytes` (size ≥ 1 byte): a batch is sent once this many bytes of stored lines are waiting.
    /// Default 1 MiB.
    public var batchMaxBytes: Int
    /// `batch_linger` (duration ≥ 0): a smaller batch is sent once its first record has waited this long.
    /// Default 1 s.
    public var batchLinger: Duration
    /// `backoff` (mapping as `uplink.backoff`): delays between retries after connection errors, timeouts, 5xx and
    /// 429. Default: `Backoff()` (250 ms doubling up to 30 s, full jitter).
    public var backoff: Backoff
    /// `timeout` (duration > 0): longest a delivery request may take before it counts as failed (and is retried).
    /// Default 30 s.
    public var timeout: Duration

    /// Creates a sink; every parameter has the default documented on its property.
    public init(
        name: String, kind: any SinkKindConfig, batchMaxBytes: Int = 1 << 20, batchLinger: Duration = .seconds(1),
        backoff: Backoff = Backoff(), timeout: Duration = .seconds(30)
    ) {
        self.name = name
        self.kind = kind
        self.batchMaxBytes = batchMaxBytes
        self.batchLinger = batchLinger
        self.backoff = backoff
        self.timeout = timeout
    }

    /// The sink's `type`.
    public var typeName: String { kind.typeName }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.name == rhs.name && lhs.kind.isEqual(to: rhs.kind) && lhs.batchMaxBytes == rhs.batchMaxBytes
            && lhs.batchLinger == rhs.batchLinger && lhs.backoff == rhs.backoff && lhs.timeout == rhs.timeout
    }

    /// The keys every sink has, as docs/configuration.md shows them.
    public static let commonKeys: [DocumentedKey] = [
        DocumentedKey(
            "name", "string, `[A-Za-z0-9._-]{1,64}`, unique", default: DocumentedKey.required,
            "Names the sink's cursor and dead-letter files, and its log lines."),
        DocumentedKey(
            "type", GeneratedDocumentation.list(SinkRegistry.kinds.map { "`" + $0.typeName + "`" }, conjunction: "or"),
            default: DocumentedKey.required, "The kind of sink; decides which other keys are allowed."),
        DocumentedKey(
            "batch_max_bytes", "size, ≥ 1 byte", default: "`1MiB`", "A batch is sent once this much (of stored lines) is waiting."),
        DocumentedKey(
            "batch_linger", "duration, ≥ 0", default: "`1s`",
            "A smaller batch is sent once its first record has waited this long. Lower it for lower latency to the store."),
        DocumentedKey(
            "backoff", "mapping as `uplink.backoff` (`initial`, `multiplier`, `max`, `reset_after`)",
            default: "250ms doubling to 30s", "Delays between retries of a failed batch (full jitter)."),
        DocumentedKey("timeout", "duration, > 0", default: "`30s`", "Longest a delivery request may take; then it is retried."),
    ]

    /// What a sink name may be (it names files).
    static let nameRule = "1-64 characters of A-Z a-z 0-9 . _ -"

    /// Whether `name` follows `nameRule` (and is not `.` or `..`).
    static func isValidName(_ name: String) -> Bool {
        PortableName.isValid(name, maximumBytes: 64) && name != "." && name != ".."
    }

    func check() throws(CollectorError) {
        func invalid(_ message: String) -> CollectorError {
            CollectorError(code: "invalid_configuration", message: "sink '\(name)': \(message)")
        }
        guard Self.isValidName(name) else { throw invalid("the name must be \(Self.nameRule)") }
        guard batchMaxBytes >= 1 else { throw invalid("batch_max_bytes must be at least 1") }
        guard batchLinger >= .zero, timeout > .zero else { throw invalid("batch_linger and timeout must not be negative") }
        if let problem = kind.problem() { throw invalid(problem) }
    }
}
