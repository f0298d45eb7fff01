import AsyncHTTPClient
import NIOCore

/// `type: http`: each batch POSTed to `url` as NDJSON (`Content-Type: application/x-ndjson`), one stored line
/// per record — `{"agent":…,"epoch":…,"seq":…,"ts":…,…}`, the record with its idempotent key — with the
/// configured `headers`, gzipped with `compression: gzip`. 2xx is success; 400/413/415/422 send the batch to the dead-letter file; anything else
/// (and connection errors) is retried with backoff.
struct HTTPSink: ForwardingSink {
    /// `url` with the configured headers (and `Content-Type` unless they set one).
    let target: SinkPostTarget

    init(_ configuration: SinkEndpoint, timeout: Duration, client: HTTPClient) {
        var headers = configuration.headers
        if !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            headers.insert(SinkHeader(name: "Content-Type", value: "application/x-ndjson"), at: 0)
        }
        self.target = SinkPostTarget(
            client: client, url: configuration.url, headers: headers, timeout: timeout, compression: configuration.compression)
    }

    func deliver(_ batch: ForwardBatch) async throws(SinkFailure) {
        _ = try await target.post(batch.lines)
    }
}
