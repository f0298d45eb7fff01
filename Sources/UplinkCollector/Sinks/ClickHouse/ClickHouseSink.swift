import AsyncHTTPClient
import Logging
import NIOCore
import UplinkCore
import UplinkWire

/// `type: clickhouse`: log records (and, with `metrics_table`, metric records) into ClickHouse over its HTTP
/// interface, `INSERT INTO <database>.<table> FORMAT JSONEachRow`, one request per batch and table.
///
/// Tables (created at start when `create_table` is on; `ClickHouseSchema` has the statements) are
/// `ReplacingMergeTree` ordered by the idempotent key (agent, epoch, seq): a batch sent again after a crash
/// collapses with the first copy when parts merge; query with `FINAL` (or run `OPTIMIZE TABLE … FINAL`) to see
/// each record once before that. Credentials go in HTTP basic authentication.
struct ClickHouseSink: ForwardingSink {
    let configuration: ClickHouseSinkConfig
    let timeout: Duration
    let client: HTTPClient
    let logger: Logger
    let headers: [SinkHeader]
    let base: String

    init(_ configuration: ClickHouseSinkConfig, timeout: Duration, client: HTTPClient, logger: Logger) {
        self.configuration = configuration
        self.timeout = timeout
        self.client = client
        self.logger = logger
        self.base = configuration.endpoint.baseURL
        var headers = configuration.endpoint.headers
        if let user = configuration.user ?? (configuration.password == nil ? nil : "default") {
            let credentials = Base64.encode(Array((user + ":" + (configuration.password ?? "")).utf8))
            headers.append(SinkHeader(name: "Authorization", value: "Basic " + credentials))
        }
        self.headers = headers
    }

    var logsTable: String { configuration.database + "." + configuration.table }
    var metricsTable: String? { configuration.metricsTable.map { configuration.database + "." + $0 } }

    func prepare() async throws(SinkFailure) {
        guard configuration.createTable else { return }
        try await execute(ClickHouseSchema.createLogs(logsTable))
        if let metricsTable { try await execute(ClickHouseSchema.createMetrics(metricsTable)) }
    }

    func deliver(_ batch: ForwardBatch) async throws(SinkFailure) {
        var logs: [UInt8] = []
        var metrics: [UInt8] = []
        for entry in batch.entries {
            switch entry.record.payload {
            case .log(let line): ClickHouseSchema.appendLogRow(entry, line, to: &logs)
            case .metric(let metric): if metricsTable != nil { ClickHouseSchema.appendMetricRow(entry, metric, to: &metrics) }
            }
        }
        if !logs.isEmpty { try await insert(logs, into: logsTable) }
        if let metricsTable, !metrics.isEmpty { try await insert(metrics, into: metricsTable) }
    }

    private func insert(_ rows: [UInt8], into table: String) async throws(SinkFailure) {
        let query = "INSERT INTO \(table) FORMAT JSONEachRow"
        do {
            _ = try await SinkHTTP.post(
                client, url: base + "/?query=" + Self.percentEncoded(query), headers: headers, body: ByteBuffer(bytes: rows),
                timeout: timeout, compression: configuration.endpoint.compression)
        } catch {
            throw Self.classified(error)
        }
    }

    private func execute(_ statement: String) async throws(SinkFailure) {
        _ = try await SinkHTTP.post(
            client, url: base + "/", headers: headers, body: ByteBuffer(string: statement), timeout: timeout)
    }

    /// ClickHouse answers 500 also for rows it cannot parse; those are the batch's fault (a rejection), unlike
    /// a server in trouble.
    static func classified(_ failure: SinkFailure) -> SinkFailure {
        guard failure.kind == .retry, failure.message.hasPrefix("HTTP 500") else { return failure }
        let dataErrors = [
            "Code: 6,", "Code: 26,", "Code: 27,", "Code: 38,", "Code: 41,", "Code: 53,", "Code: 69,", "Code: 70,",
            "Code: 72,", "Code: 117,", "Code: 131,",
        ]
        return dataErrors.contains(where: failure.message.contains) ? SinkFailure(.reject, failure.message) : failure
    }

    static func percentEncoded(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                output += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return output
    }
}
