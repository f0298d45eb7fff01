import UplinkConfig

/// `type: clickhouse`: log records (and optionally metrics) into ClickHouse over its HTTP interface.
public struct ClickHouseSinkConfig: SinkKindConfig, Equatable {
    /// `url` (the HTTP interface, `http://clickhouse:8123`), `headers`, `compression` (default `none`).
    public var endpoint: SinkEndpoint
    /// `database` (identifier). Default `default`.
    public var database: String
    /// `table` (identifier): the logs table. Default `uplink_logs`.
    public var table: String
    /// `metrics_table` (identifier): when set, metric records go to this table too. Default: none (skipped).
    public var metricsTable: String?
    /// `user`. Default: none (the server's `default` user when a password is given).
    public var user: String?
    /// `password`, or `password_file` (read at load and trimmed). Default: none.
    public var password: String?
    /// `create_table` (bool): create the tables at start when missing. Default `true`.
    public var createTable: Bool

    public init(
        url: String, headers: [SinkHeader] = [], compression: SinkCompression = Self.defaultCompression,
        database: String = "default", table: String = "uplink_logs", metricsTable: String? = nil, user: String? = nil,
        password: String? = nil, createTable: Bool = true
    ) {
        self.endpoint = SinkEndpoint(url: url, headers: headers, compression: compression)
        self.database = database
        self.table = table
        self.metricsTable = metricsTable
        self.user = user
        self.password = password
        self.createTable = createTable
    }

    /// `compression`'s default for this kind: on a loopback or LAN link the CPU matters more than the bytes.
    public static let defaultCompression: SinkCompression = SinkCompression.none

    public static let typeName: String = "clickhouse"
    public static let summary: String = """
        Log records (and, with `metrics_table`, metric records) into ClickHouse over its HTTP interface, \
        `INSERT … FORMAT JSONEachRow`, one request per batch and table. The tables are `ReplacingMergeTree` ordered by \
        the idempotent key, so a batch resent after a crash collapses when parts merge (schema in \
        docs/architecture.md). Credentials go in HTTP basic authentication.
        """
    public static let keys: [DocumentedKey] =
        SinkEndpoint.keys(url: "The HTTP interface, `http://clickhouse:8123`.", defaultCompression: defaultCompression) + ownKeys

    private static let ownKeys: [DocumentedKey] = [
        DocumentedKey("database", "identifier", default: "`default`", "Database holding the tables."),
        DocumentedKey("table", "identifier", default: "`uplink_logs`", "Table for log records."),
        DocumentedKey(
            "metrics_table", "identifier", default: "none",
            "When set, metric records are stored there too; otherwise they are skipped by this sink."),
        DocumentedKey("user", "string", default: "none (`default`)", "HTTP basic authentication."),
        DocumentedKey("password", "string", default: "none", "Not together with `password_file`."),
        DocumentedKey(
            "password_file", "path", default: "none",
            "File holding the password, read at load and trimmed (see [Secrets](#secrets-token_file))."),
        DocumentedKey("create_table", "bool", default: "`true`", "Create the tables at start when missing."),
    ]
    public static let example: String = """
        - name: logs
          type: clickhouse
          url: http://127.0.0.1:8123
          database: default
          table: uplink_logs
          metrics_table: uplink_metrics
          user: uplink
          password: ${CLICKHOUSE_PASSWORD:-}   # or password_file: /etc/uplink/clickhouse-password
          create_table: true
          compression: none
          headers: { X-ClickHouse-Format: JSONEachRow }
        """

    public static func decode(_ mapping: ConfigMapping) -> Self? {
        let endpoint = SinkEndpoint.decode(mapping, defaultCompression: defaultCompression)
        var config = Self(url: endpoint?.url ?? "")
        if let endpoint { config.endpoint = endpoint }
        if let database = identifier(mapping, "database") { config.database = database }
        if let table = identifier(mapping, "table") { config.table = table }
        config.metricsTable = identifier(mapping, "metrics_table")
        config.user = mapping.string("user")
        config.password = mapping.secret("password", fileKey: "password_file")
        if let create = mapping.bool("create_table") { config.createTable = create }
        return endpoint == nil ? nil : config
    }

    public func problem() -> String? {
        if let problem = endpoint.problem() { return problem }
        let names: [String] = [database, table] + (metricsTable.map { [$0] } ?? [])
        for name in names where !Self.isIdentifier(name) {
            return "'\(name)' is not a plain identifier ([A-Za-z_][A-Za-z0-9_]*)"
        }
        return nil
    }

    public func makeSink(_ context: SinkContext) throws -> any ForwardingSink {
        ClickHouseSink(self, timeout: context.timeout, client: context.client, logger: context.logger)
    }

    /// Whether `text` is a plain ClickHouse identifier, `[A-Za-z_][A-Za-z0-9_]*` of at most 128 bytes: database and
    /// table names are written into SQL unquoted.
    static func isIdentifier(_ text: String) -> Bool {
        func isLetter(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
        }
        guard let first = text.utf8.first, first == UInt8(ascii: "_") || isLetter(first), text.utf8.count <= 128 else {
            return false
        }
        return text.utf8.allSatisfy { $0 == UInt8(ascii: "_") || isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    private static func identifier(_ mapping: ConfigMapping, _ key: String) -> String? {
        mapping.string(key) { text in
            isIdentifier(text)
                ? .success(text)
                : .failure(ConfigValueError(
                    message: "'\(text)' is not a plain identifier", hint: "letters, digits and '_', not starting with a digit"))
        }
    }
}
