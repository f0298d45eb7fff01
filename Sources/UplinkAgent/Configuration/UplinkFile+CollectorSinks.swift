import UplinkConfig
import UplinkCore

extension UplinkFile.CollectorSection {
    /// `collector.sinks`, `collector.retention` and `collector.log`: the write-ahead log and the sinks its
    /// forwarders deliver to (docs/configuration.md, "Collector sinks"). A plain description; the `uplink` command
    /// maps it onto the collector's `SinkConfiguration`.
    public struct ForwardingSection: Sendable, Equatable {
        /// `collector.sinks` (list, at least one): the sinks, in order.
        public var sinks: [SinkSection]
        /// `collector.log.segment_bytes` (size ≥ `1KiB`): a log segment is closed once it is this long.
        /// Default `64MiB`.
        public var segmentBytes: Int
        /// `collector.log.segment_age` (duration > 0): a log segment is closed once it is this old. Default `1h`.
        public var segmentAge: Duration
        /// `collector.retention.max_bytes` (size ≥ `1KiB`): most bytes the log keeps; older closed segments are
        /// deleted even when a sink has not forwarded them (the loss is logged and counted). Default `10GiB`.
        public var retentionBytes: Int
        /// `collector.retention.max_age` (duration > 0): closed segments last written longer ago are deleted
        /// likewise. Default `168h` (7 days).
        public var retentionAge: Duration

        public init(
            sinks: [SinkSection] = [], segmentBytes: Int = 64 << 20, segmentAge: Duration = .seconds(3600),
            retentionBytes: Int = 10 << 30, retentionAge: Duration = .seconds(7 * 86400)
        ) {
            self.sinks = sinks
            self.segmentBytes = segmentBytes
            self.segmentAge = segmentAge
            self.retentionBytes = retentionBytes
            self.retentionAge = retentionAge
        }
    }

    /// One entry of `collector.sinks`.
    public struct SinkSection: Sendable, Equatable {
        /// `type`: `jsonl`, `stdout`, `victoriametrics`, `clickhouse` or `http`.
        public enum Kind: String, Sendable, Equatable, CaseIterable {
            case jsonl, stdout, victoriametrics, clickhouse, http
        }

        /// `name` (required, `[A-Za-z0-9._-]{1,64}`, unique): names the sink's cursor and dead-letter files.
        public var name: String
        /// `type` (required).
        public var kind: Kind
        /// `batch_max_bytes` (size ≥ 1 byte): send a batch once this much is waiting. Default `1MiB`.
        public var batchMaxBytes: Int = 1 << 20
        /// `batch_linger` (duration ≥ 0): send a smaller batch once its first record waited this long. Default `1s`.
        public var batchLinger: Duration = .seconds(1)
        /// `backoff` (mapping: `initial`, `multiplier`, `max`, `reset_after`, as `uplink.backoff`): retry delays.
        /// Default 250ms doubling to 30s.
        public var backoff = Backoff()
        /// `timeout` (duration > 0): longest a delivery request may take. Default `30s`.
        public var timeout: Duration = .seconds(30)
        /// `url` (victoriametrics, clickhouse, http; required there): the store's URL.
        public var url: String?
        /// `path` (jsonl): file to append to, relative to the configuration file. Default `<data_dir>/records.jsonl`.
        public var path: String?
        /// `headers` (victoriametrics, clickhouse, http; mapping of strings): extra request headers. Default none.
        public var headers: [(name: String, value: String)] = []
        /// `database` (clickhouse). Default `default`.
        public var database = "default"
        /// `table` (clickhouse): the logs table. Default `uplink_logs`.
        public var table = "uplink_logs"
        /// `metrics_table` (clickhouse): also store metric records in this table. Default: none (metrics skipped).
        public var metricsTable: String?
        /// `user` (clickhouse). Default: none (`default` when a password is given).
        public var user: String?
        /// `password` or `password_file` (clickhouse; the file is read and trimmed). Default: none.
        public var password: String?
        /// `create_table` (clickhouse, bool): create the tables at start when missing. Default `true`.
        public var createTable = true
        /// `compression` (victoriametrics, clickhouse, http): `gzip` or `none`, the request bodies' encoding.
        /// Default: `gzip` for victoriametrics, `none` for clickhouse and http (nil here: the sink kind's default).
        public var compression: Compression?

        /// `compression`'s values.
        public enum Compression: String, Sendable, Equatable, CaseIterable {
            case gzip, none
        }

        public init(name: String, kind: Kind) {
            self.name = name
            self.kind = kind
        }

        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.name == rhs.name && lhs.kind == rhs.kind && lhs.batchMaxBytes == rhs.batchMaxBytes
                && lhs.batchLinger == rhs.batchLinger && lhs.backoff == rhs.backoff && lhs.timeout == rhs.timeout
                && lhs.url == rhs.url && lhs.path == rhs.path && lhs.headers.elementsEqual(rhs.headers, by: ==)
                && lhs.database == rhs.database && lhs.table == rhs.table && lhs.metricsTable == rhs.metricsTable
                && lhs.user == rhs.user && lhs.password == rhs.password && lhs.createTable == rhs.createTable
                && lhs.compression == rhs.compression
        }

        static let commonKeys = ["name", "type", "batch_max_bytes", "batch_linger", "backoff", "timeout"]

        /// The keys a sink of `kind` accepts besides the common ones.
        static func keys(for kind: Kind) -> [String] {
            switch kind {
            case .jsonl: ["path"]
            case .stdout: []
            case .victoriametrics, .http: ["url", "headers", "compression"]
            case .clickhouse:
                ["url", "headers", "compression", "database", "table", "metrics_table", "user", "password", "password_file", "create_table"]
            }
        }
    }

    /// Decodes `sinks`, `retention` and `log`; `forwarding` stays nil without `sinks`. Reported: `retention` or
    /// `log` without `sinks`; `stdout`/`jsonl` together with `sinks` (use sinks of those types); an empty list;
    /// unknown or missing `type`, bad or duplicate `name`, unknown keys per type, a missing `url`, and each
    /// key's own problems.
    mutating func decodeSinks(_ section: ConfigMapping) {
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
        var forwarding = ForwardingSection()
        if elements.isEmpty {
            decoder.report(
                .missingKey, at: section.value("sinks")!.mark, path: section.path("sinks"), "at least one sink is required",
                hint: "e.g. 'sinks: [{ name: file, type: jsonl }]'")
        }
        var firstUse: [String: ConfigElement] = [:]
        let typeNames = SinkSection.Kind.allCases.map(\.rawValue).joined(separator: ", ")
        for element in elements {
            guard let mapping = decoder.mapping(element.node, at: element.path, allowedKeys: nil) else { continue }
            let kind = mapping.require("type", hint: "known types: " + typeNames).flatMap { _ in
                mapping.enumeration("type", as: SinkSection.Kind.self)
            }
            let name = mapping.require("name", hint: "a unique name such as 'vm'").flatMap { node -> String? in
                guard let name = decoder.string(node, at: mapping.path("name")) else { return nil }
                let valid = (1...64).contains(name.utf8.count) && name != "." && name != ".."
                    && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
                guard valid else {
                    decoder.report(
                        .invalidValue, at: node.mark, path: mapping.path("name"), "invalid sink name '\(name)'",
                        hint: "1-64 characters of A-Z a-z 0-9 . _ -")
                    return nil
                }
                if let first = firstUse[name] {
                    decoder.report(
                        .duplicateName, at: node.mark, path: mapping.path("name"),
                        "duplicate sink name '\(name)' (first used by \(first.path) at line \(first.node.mark.line))",
                        hint: "sink names must be unique")
                    return nil
                }
                firstUse[name] = ConfigElement(node: node, path: element.path)
                return name
            }
            guard let kind else { continue }
            mapping.rejectUnknownKeys(allowed: SinkSection.commonKeys + SinkSection.keys(for: kind))
            var sink = SinkSection(name: name ?? "", kind: kind)
            Self.decodeSink(mapping, into: &sink)
            if name != nil { forwarding.sinks.append(sink) }
        }
        if let retention = section.mapping("retention", allowedKeys: ["max_bytes", "max_age"]) {
            if let bytes = retention.size("max_bytes", .atLeast(1024)) { forwarding.retentionBytes = bytes }
            if let age = retention.duration("max_age", .greaterThan(.zero)) { forwarding.retentionAge = age }
        }
        if let log = section.mapping("log", allowedKeys: ["segment_bytes", "segment_age"]) {
            if let bytes = log.size("segment_bytes", .atLeast(1024)) { forwarding.segmentBytes = bytes }
            if let age = log.duration("segment_age", .greaterThan(.zero)) { forwarding.segmentAge = age }
        }
        self.forwarding = forwarding
    }

    private static func decodeSink(_ mapping: ConfigMapping, into sink: inout SinkSection) {
        if let bytes = mapping.size("batch_max_bytes", .atLeast(1)) { sink.batchMaxBytes = bytes }
        if let linger = mapping.duration("batch_linger") { sink.batchLinger = linger }
        if let backoff = mapping.mapping("backoff", allowedKeys: UplinkFile.UplinkSection.backoffKeys) {
            sink.backoff = UplinkFile.UplinkSection.decodeBackoff(backoff)
        }
        if let timeout = mapping.duration("timeout", .greaterThan(.zero)) { sink.timeout = timeout }
        switch sink.kind {
        case .jsonl:
            if let path = mapping.string("path") {
                sink.path = ConfigFiles.resolve(path, relativeTo: mapping.decoder.baseDirectory)
            }
        case .stdout:
            break
        case .victoriametrics, .clickhouse, .http:
            if mapping.require("url", hint: "the store's URL, e.g. 'http://127.0.0.1:8428'") != nil {
                sink.url = mapping.url("url")
            }
            if let headers = mapping.mapping("headers", allowedKeys: nil) {
                for entry in headers.entries {
                    guard let value = mapping.decoder.string(entry.value, at: headers.path(entry.name)) else { continue }
                    sink.headers.append((entry.name, value))
                }
            }
            if let compression = mapping.enumeration("compression", as: SinkSection.Compression.self) {
                sink.compression = compression
            }
        }
        guard sink.kind == .clickhouse else { return }
        for (key, keyPath) in [("database", \SinkSection.database), ("table", \SinkSection.table)] {
            if let value = identifier(mapping, key) { sink[keyPath: keyPath] = value }
        }
        sink.metricsTable = identifier(mapping, "metrics_table")
        sink.user = mapping.string("user")
        sink.password = mapping.secret("password", fileKey: "password_file")
        if let create = mapping.bool("create_table") { sink.createTable = create }
    }

    /// A ClickHouse database or table name: `[A-Za-z_][A-Za-z0-9_]*` (it is written into SQL unquoted).
    private static func identifier(_ mapping: ConfigMapping, _ key: String) -> String? {
        guard let node = mapping.value(key), let text = mapping.string(key) else { return nil }
        let valid = text.first.map { $0 == "_" || ($0.isASCII && $0.isLetter) } == true
            && text.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) } && text.utf8.count <= 128
        guard valid else {
            mapping.decoder.report(
                .invalidValue, at: node.mark, path: mapping.path(key), "'\(text)' is not a plain identifier",
                hint: "letters, digits and '_', not starting with a digit")
            return nil
        }
        return text
    }
}
