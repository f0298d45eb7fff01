import UplinkWire

/// How a `Collector` listens and where it stores what it receives.
public struct CollectorConfiguration: Sendable, Equatable {
    /// Address to listen on. Default `"127.0.0.1"` (loopback only); use `"0.0.0.0"` to accept remote agents.
    public var host: String
    /// TCP port to listen on. Default `4318`; `0` picks any free port (see `Collector.waitUntilListening()`).
    public var port: Int
    /// Directory for the collector's files (created if missing): `records.jsonl`, `marks.log` and, by default,
    /// `rejects.jsonl`. Default `"./collector-data"`.
    public var dataDirectory: String
    /// Whether every record is printed to standard output, one human-readable line per record. Default `true`.
    /// Without `sinks` this is an implicit sink of type `stdout` named `collector.stdout`, which prints records as
    /// soon as they are in the log.
    ///
    /// Standard output is not transactional: a crash between printing a batch and persisting the sink's cursor
    /// prints that batch again at the next start.
    public var stdoutSink: Bool
    /// Whether records are appended to `<dataDirectory>/records.jsonl`, each received line with the agent id and
    /// epoch spliced in front. Default `true`. Without `sinks` this file is the write-ahead log itself (written
    /// once, never rolled or deleted), and so the source of truth for the marks after a restart; when off, the log
    /// is `<dataDirectory>/log/`.
    public var jsonlSink: Bool
    /// The bearer token agents must send in `Authorization: Bearer <token>`; `nil` (the default) accepts any agent.
    public var token: String?
    /// Longest body line accepted, in bytes, without its terminator. Longer lines are counted, noted in the rejects
    /// file with their length and skipped. Default 1 MiB (1 048 576).
    public var maxLineBytes: Int
    /// Path of the rejects file, where malformed and too-long lines are noted as JSON lines. Default `nil`, meaning
    /// `<dataDirectory>/rejects.jsonl`.
    public var rejectsFile: String?
    /// Whether every write to the log (the records file) is followed by `fsync(2)` before the batch is acknowledged,
    /// and every write to the marks ledger too. Default `false`.
    ///
    /// Without it, writes reach the operating system before the acknowledgement, so acknowledged records survive a
    /// crash or `SIGKILL` of the collector; with it they also survive a power loss, at the cost of one disk flush
    /// per group of batches (the ledger, written every 1 MiB of log, adds one flush then; recovery reads the marks
    /// it lacks from the log).
    public var fsync: Bool
    /// How long a new connection may take to deliver a complete request head (with TLS: to finish the handshake,
    /// then to deliver the head), and how long a kept-alive connection may sit between requests. Past it the
    /// connection is closed. Default 10 s.
    public var requestHeadTimeout: Duration
    /// How long a stream's request body may bring no bytes at all before the collector ends the stream and closes
    /// its connection. Agents send a heartbeat line after 15 s without other lines (the default
    /// `uplink.heartbeat`), so the default, 90 s, lets several heartbeats go missing before a live agent is cut.
    /// Time during which the collector itself is not reading (its storage is busy) does not count.
    public var streamIdleTimeout: Duration
    /// Shortest time between two acknowledgements of a stream, unless one is urgent (a quarter of the agent's
    /// `Uplink-Window`, at most 128 KiB, was stored since; docs/protocol.md, "Response"). Not a configuration key:
    /// fewer acks cost less on both ends at a trickle, and an agent's ring never waits on it. Default 250 ms.
    public var ackInterval: Duration = PendingAck.interval
    /// Most streams served at once. A stream beyond it is answered `503 Service Unavailable` (counted in
    /// `CollectorEdgeStatistics.streamsOverLimit`); an agent that already has a stream may always replace it.
    /// Default 1024.
    public var maxStreams: Int
    /// TLS on the listening socket, with HTTP/2 offered through ALPN; `nil` (the default) serves plaintext
    /// HTTP/1.1 (on loopback, or behind a TLS-terminating proxy).
    public var tls: CollectorTLS?
    /// The sinks records are forwarded to from the write-ahead log (`collector.sinks`). Default `nil`: the
    /// implicit sinks of `jsonlSink` and `stdoutSink`. When set, the log is `<dataDirectory>/log/` and
    /// `jsonlSink` and `stdoutSink` are ignored: add sinks of type `jsonl` and `stdout` instead.
    public var sinks: [SinkConfiguration]? = nil
    /// Segments and retention of the write-ahead log (`collector.retention`, `collector.log_segment_*`); used
    /// when the log is `<dataDirectory>/log/` (not when it is `records.jsonl`).
    public var log = CollectorLogSettings()
    /// The compressed `Content-Encoding`s streams may use (`collector.accept_encodings`). A stream with another is
    /// answered `415` with an `Accept-Encoding` header, and agents then fall back to an uncompressed body; an
    /// uncompressed body (no header, or `identity`) is always accepted (`.none` here changes nothing).
    /// Default: `zstd` and `gzip`.
    public var acceptEncodings: Set<WireCompression> = [.zstd, .gzip]
    /// Remote configuration served to agents (`collector.remote_config`): `GET /v1/config`, its blobs, status
    /// reports and the `Uplink-Config` hint on streams. Default `nil`: none of it (those endpoints answer `404`).
    public var remoteConfig: RemoteConfigSettings? = nil

    /// Creates a configuration; every parameter has the default documented on its property.
    public init(
        host: String = "127.0.0.1",
        port: Int = 4318,
        dataDirectory: String = "./collector-data",
        stdoutSink: Bool = true,
        jsonlSink: Bool = true,
        token: String? = nil,
        maxLineBytes: Int = 1 << 20,
        rejectsFile: String? = nil,
        fsync: Bool = false,
        requestHeadTimeout: Duration = .seconds(10),
        streamIdleTimeout: Duration = .seconds(90),
        maxStreams: Int = 1024,
        tls: CollectorTLS? = nil
    ) {
        self.host = host
        self.port = port
        self.dataDirectory = dataDirectory
        self.stdoutSink = stdoutSink
        self.jsonlSink = jsonlSink
        self.token = token
        self.maxLineBytes = maxLineBytes
        self.rejectsFile = rejectsFile
        self.fsync = fsync
        self.requestHeadTimeout = requestHeadTimeout
        self.streamIdleTimeout = streamIdleTimeout
        self.maxStreams = maxStreams
        self.tls = tls
    }

    /// `<dataDirectory>/records.jsonl`.
    public var recordsFile: String { path(in: dataDirectory, "records.jsonl") }
    /// `<dataDirectory>/log`, the write-ahead log's segments (with `sinks`).
    public var logDirectory: String { path(in: dataDirectory, "log") }
    /// `<dataDirectory>/cursors`, one file per sink with the log offset it has delivered up to.
    public var cursorDirectory: String { path(in: dataDirectory, "cursors") }
    /// `<dataDirectory>/dead-letter`, one `<sink>.jsonl` per sink with the records its store refused for good.
    public var deadLetterDirectory: String { path(in: dataDirectory, "dead-letter") }
    /// `<dataDirectory>/marks.log`, the marks ledger.
    public var marksFile: String { path(in: dataDirectory, "marks.log") }
    /// `<dataDirectory>/remote-config-halts.json`, the halted rollouts of `remoteConfig` (docs/remote-config.md).
    public var remoteConfigHaltsFile: String { path(in: dataDirectory, "remote-config-halts.json") }
    /// `rejectsFile`, or `<dataDirectory>/rejects.jsonl` when it is not set.
    public var resolvedRejectsFile: String { rejectsFile ?? path(in: dataDirectory, "rejects.jsonl") }

    private func path(in directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}

extension CollectorConfiguration {
    /// The `Accept-Encoding` value of a `415`: the accepted codings, best first, then `identity`.
    var acceptEncodingsHeader: String {
        (WireCompression.allCases.filter { $0 != .none && acceptEncodings.contains($0) }.compactMap(\.contentEncoding)
            + ["identity"]).joined(separator: ", ")
    }

    /// Throws a `CollectorError` (`invalid_configuration`) for a limit no collector can run with.
    func checkLimits() throws {
        func invalid(_ message: String) -> CollectorError { CollectorError(code: "invalid_configuration", message: message) }
        guard maxLineBytes > 0 else { throw invalid("maxLineBytes must be at least 1") }
        guard maxStreams > 0 else { throw invalid("maxStreams must be at least 1") }
        guard requestHeadTimeout > .zero else { throw invalid("requestHeadTimeout must be longer than zero") }
        guard streamIdleTimeout > .zero else { throw invalid("streamIdleTimeout must be longer than zero") }
        guard ackInterval >= .zero else { throw invalid("ackInterval must not be negative") }
        if let sinks {
            try log.check()
            var names = Set<String>()
            for sink in sinks {
                guard names.insert(sink.name).inserted else { throw invalid("sink name '\(sink.name)' is used twice") }
                try sink.check()
            }
        }
    }
}

extension Collector {
    /// For the start-up log line: `off`, or the client authentication and identity rule.
    var tlsDescription: String {
        guard let tls = configuration.tls else { return "off" }
        return "on (h2, http/1.1; client_auth \(tls.clientAuthentication.rawValue), agent_identity \(tls.agentIdentity.rawValue))"
    }
}
