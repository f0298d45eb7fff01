import AsyncHTTPClient
import NIOCore

/// `type: http`: each batch POSTed to `url` as NDJSON (`Content-Type: application/x-ndjson`), one stored line
/// per record — `{"agent":…,"epoch":…,"seq":…,"ts":…,…}`, the record with its idempotent key — with the
/// configured `headers`, gzipped with `compression: gzip`. 2xx is success; 400/413/415/422 send the batch to the dead-letter file; anything else
/// (and connection errors) is retried with backoff.
struct HTTPSink: ForwardingSink {
    let url: String
    let headers: [SinkHeader]
    let timeout: Duration
    let compression: SinkCompression
    let client: HTTPClient

    init(_ configuration: SinkEndpoint, timeout: Duration, client: HTTPClient) {
        self.url = configuration.url
        var headers = configuration.headers
        if !headers.contains(where: { $0.name.lowercased() == "content-type" }) {
            headers.insert(SinkHeader(name: "Content-Type", value: "application/x-ndjson"), at: 0)
        }
        self.headers = headers
        self.timeout = timeout
        self.compression = configuration.compression
        self.client = client
    }

    func deliver(_ batch: ForwardBatch) async throws(SinkFailure) {
        _ = try await SinkHTTP.post(client, url: url, headers: headers, body: batch.lines, timeout: timeout, compression: compression)
    }
}
