import UplinkConfig
import UplinkWire

extension CollectorConfiguration {
    /// The keys of the `collector` section (docs/configuration.md, "`collector`").
    public static let keys = [
        "listen", "data_dir", "stdout", "jsonl", "token", "token_file", "max_line_bytes", "fsync", "rejects_file",
        "request_head_timeout", "stream_idle_timeout", "max_streams", "tls", "sinks", "retention", "log",
        "accept_encodings", "remote_config",
    ]
    /// Smallest `max_line_bytes` a file may set.
    public static let minimumLineBytes = 1024

    /// Decodes the `collector` section of a configuration file, reporting each problem (unknown keys included) to
    /// `section.decoder`; keys that are absent or unusable keep their defaults. `tls` files are read and checked
    /// now, so that `uplink validate` reports what would otherwise fail at start.
    public static func decode(_ section: ConfigMapping) -> CollectorConfiguration {
        section.rejectUnknownKeys(allowed: keys)
        var collector = CollectorConfiguration()
        if let listen = section.hostPort("listen") {
            collector.host = listen.host
            collector.port = listen.port
        }
        if let directory = section.string("data_dir") { collector.dataDirectory = directory }
        if let stdout = section.bool("stdout") { collector.stdoutSink = stdout }
        if let jsonl = section.bool("jsonl") { collector.jsonlSink = jsonl }
        collector.token = section.secret("token", fileKey: "token_file")
        if let bytes = section.size("max_line_bytes", .atLeast(minimumLineBytes)) { collector.maxLineBytes = bytes }
        if let fsync = section.bool("fsync") { collector.fsync = fsync }
        if let rejects = section.string("rejects_file") { collector.rejectsFile = rejects }
        if let timeout = section.duration("request_head_timeout", .between(.milliseconds(1), .seconds(3600))) {
            collector.requestHeadTimeout = timeout
        }
        if let timeout = section.duration("stream_idle_timeout", .between(.milliseconds(1), .seconds(86400))) {
            collector.streamIdleTimeout = timeout
        }
        if let streams = section.int("max_streams", .between(1, 1_000_000)) { collector.maxStreams = streams }
        if let mapping = section.mapping("tls", allowedKeys: CollectorTLS.keys) {
            collector.tls = CollectorTLS.decode(mapping)
        }
        if let encodings = decodeAcceptEncodings(section) { collector.acceptEncodings = Set(encodings) }
        collector.decodeForwarding(section)
        if let mapping = section.mapping("remote_config", allowedKeys: RemoteConfigSettings.keys) {
            collector.remoteConfig = RemoteConfigSettings.decode(mapping)
        }
        return collector
    }

    /// `accept_encodings`: a list of `zstd` and `gzip`, each at most once (`none` is not listed: an uncompressed
    /// body is always accepted). Nil when absent or when an item is unusable (reported).
    private static func decodeAcceptEncodings(_ section: ConfigMapping) -> [WireCompression]? {
        guard let items = section.list("accept_encodings") else { return nil }
        let allowed = WireCompression.allCases.filter { $0 != .none }
        var encodings: [WireCompression] = []
        var valid = true
        for item in items {
            guard let name = section.decoder.string(item.node, at: item.path) else {
                valid = false
                continue
            }
            guard let encoding = allowed.first(where: { $0.rawValue == name }) else {
                let hint =
                    name == "none" || name == "identity"
                    ? "an uncompressed body is always accepted; list only zstd and gzip"
                    : "list any of: \(allowed.map(\.rawValue).joined(separator: ", "))"
                section.decoder.report(
                    .invalidValue, at: item.node.mark, path: item.path, "'\(name)' is not a compressed encoding", hint: hint)
                valid = false
                continue
            }
            guard !encodings.contains(encoding) else {
                section.decoder.report(.invalidValue, at: item.node.mark, path: item.path, "'\(name)' is listed twice")
                valid = false
                continue
            }
            encodings.append(encoding)
        }
        return valid ? encodings : nil
    }

    /// `sinks`, `retention` and `log`; `sinks` stays nil without a `sinks` list. Reported: `retention` or `log`
    /// without `sinks`; `stdout`/`jsonl` together with `sinks` (use sinks of those types); an empty list; unknown
    /// or missing `type`, bad or duplicate `name`, unknown keys per type, and each key's own problems.
    private mutating func decodeForwarding(_ section: ConfigMapping) {
        let decoder = section.decoder
        guard let elements = section.list("sinks") else {
            for key in ["retention", "log"] where section.contains(key) {
                decoder.report(
                    .invalidValue, at: section.value(key)!.mark, path: section.path(key),
                    "'\(key)' applies to the write-ahead log, which exists only with 'sinks'",
                    hint: "add 'sinks', or remove '\(key)'")
            }
            return
        }
        for key in ["stdout", "jsonl"] where section.contains(key) {
            decoder.report(
                .invalidValue, at: section.value(key)!.mark, path: section.path(key),
                "'\(key)' is not used when 'sinks' is set", hint: "add a sink with 'type: \(key)' instead")
        }
        if elements.isEmpty {
            decoder.report(
                .missingKey, at: section.value("sinks")!.mark, path: section.path("sinks"), "at least one sink is required",
                hint: "e.g. 'sinks: [{ name: file, type: jsonl }]'")
        }
        var decoded: [SinkConfiguration] = []
        var names = ConfigItemNames(of: "sink")
        for element in elements {
            guard let mapping = decoder.mapping(element.node, at: element.path, allowedKeys: nil) else { continue }
            let sink = SinkConfiguration.decode(mapping, names: &names)
            if let sink { decoded.append(sink) }
        }
        sinks = decoded
        if let retention = section.mapping("retention", allowedKeys: ["max_bytes", "max_age"]) {
            if let bytes = retention.size("max_bytes", .atLeast(1024)) { log.retentionBytes = Int64(bytes) }
            if let age = retention.duration("max_age", .greaterThan(.zero)) { log.retentionAge = age }
        }
        if let settings = section.mapping("log", allowedKeys: ["segment_bytes", "segment_age"]) {
            if let bytes = settings.size("segment_bytes", .atLeast(1024)) { log.segmentBytes = Int64(bytes) }
            if let age = settings.duration("segment_age", .greaterThan(.zero)) { log.segmentAge = age }
        }
    }
}

extension SinkConfiguration {
    /// Decodes one item of `collector.sinks`: `name` (checked, and taken from `names`), `type`, the common keys and
    /// the kind's own; nil when the item cannot make a sink (every problem reported).
    static func decode(_ mapping: ConfigMapping, names: inout ConfigItemNames) -> Self? {
        let decoder = mapping.decoder
        let typeNames = SinkRegistry.kinds.map { $0.typeName }
        var kind: (any SinkKindConfig.Type)?
        if let node = mapping.require("type", hint: "known types: " + typeNames.joined(separator: ", ")),
            let typeName = decoder.choice(node, at: mapping.path("type"), allowed: typeNames)
        {
            kind = SinkRegistry.kind(named: typeName)
        }
        let name = names.take(mapping, missing: "a unique name such as 'vm'") { text in
            isValidName(text) ? .success(text) : .failure(ConfigValueError(message: "invalid sink name '\(text)'", hint: nameRule))
        }
        guard let kind else { return nil }
        mapping.rejectUnknownKeys(allowed: ["name", "type", "batch_max_bytes", "batch_linger", "backoff", "timeout"] + kind.allowedKeys)
        let batchMaxBytes = mapping.size("batch_max_bytes", .atLeast(1))
        let batchLinger = mapping.duration("batch_linger")
        let backoff = mapping.backoff("backoff")
        let timeout = mapping.duration("timeout", .greaterThan(.zero))
        guard let settings = kind.decodeSettings(mapping), let name else { return nil }
        var sink = SinkConfiguration(name: name, kind: settings)
        if let batchMaxBytes { sink.batchMaxBytes = batchMaxBytes }
        if let batchLinger { sink.batchLinger = batchLinger }
        if let backoff { sink.backoff = backoff }
        if let timeout { sink.timeout = timeout }
        return sink
    }
}
