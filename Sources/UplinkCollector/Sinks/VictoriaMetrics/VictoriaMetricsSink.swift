import AsyncHTTPClient
import NIOCore
import UplinkCore
import UplinkWire

/// `type: victoriametrics`: metric records into VictoriaMetrics' JSON line import, `POST <url>/api/v1/import`.
///
/// JSON lines rather than the Influx line protocol: they carry the series name and labels exactly as
/// `PrometheusNames` makes them (Influx `/write` would rebuild names from measurement and field), and a float's
/// shortest round-trip text, so every stored value equals the agent's. `url` is a single node
/// (`http://host:8428`) or a cluster's vminsert with its tenant (`http://host:8480/insert/0/prometheus`).
/// Bodies are gzipped by default (`compression`): JSON lines of samples repeat their label sets, and shrink about
/// tenfold. Log records are skipped. NaN values are left out (VictoriaMetrics does not store NaN samples);
/// ±Inf are sent as `Inf`/`-Inf`. Timestamps are milliseconds (nanoseconds divided down), as VictoriaMetrics
/// stores them. A resent batch stores the same samples again: run VictoriaMetrics with
/// `-dedup.minScrapeInterval=1ms` so that identical (series, timestamp) samples collapse.
struct VictoriaMetricsSink: ForwardingSink {
    /// `<url>/api/v1/import` with the configured headers.
    let target: SinkPostTarget

    init(_ configuration: SinkEndpoint, timeout: Duration, client: HTTPClient) {
        self.target = SinkPostTarget(
            client: client, url: configuration.baseURL + "/api/v1/import", headers: configuration.headers, timeout: timeout,
            compression: configuration.compression)
    }

    func deliver(_ batch: ForwardBatch) async throws(SinkFailure) {
        var bytes: [UInt8] = []
        var names = PrometheusNames()
        for entry in batch.entries {
            guard case .metric(let metric) = entry.record.payload, !metric.value.isNaN else { continue }
            Self.appendSample(metric, entry: entry, names: &names, to: &bytes)
        }
        guard !bytes.isEmpty else { return }
        _ = try await target.post(ByteBuffer(bytes: bytes))
    }

    /// `{"metric":{"__name__":…,"agent":…,"source":…,<tags>},"values":[v],"timestamps":[ms]}\n`
    static func appendSample(_ metric: Metric, entry: LogEntry, names: inout PrometheusNames, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"metric":{"__name__":"#.utf8)
        WireLineWriter.appendJSONString(names.seriesName(metric.name, unit: metric.unit), to: &bytes)
        for (label, value) in PrometheusNames.labels(agent: entry.agent, source: entry.record.source, tags: metric.tags) {
            bytes.append(UInt8(ascii: ","))
            WireLineWriter.appendJSONString(label, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            WireLineWriter.appendJSONString(value, to: &bytes)
        }
        bytes.append(contentsOf: #"},"values":["#.utf8)
        if metric.value.isInfinite {
            bytes.append(contentsOf: (metric.value < 0 ? "-Inf" : "Inf").utf8)
        } else {
            bytes.append(contentsOf: metric.value.description.utf8)
        }
        bytes.append(contentsOf: #"],"timestamps":["#.utf8)
        bytes.append(contentsOf: String(millisecondsFloor(entry.record.timestamp)).utf8)
        bytes.append(contentsOf: "]}\n".utf8)
    }

    static func millisecondsFloor(_ nanoseconds: Int64) -> Int64 {
        nanoseconds >= 0 ? nanoseconds / 1_000_000 : (nanoseconds - 999_999) / 1_000_000
    }
}
