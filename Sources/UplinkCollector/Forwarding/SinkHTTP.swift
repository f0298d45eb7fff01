import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import UplinkCore
import UplinkWire

/// The one way sinks talk HTTP: a POST through the collector's shared client, its body gzipped when the sink says
/// so, its status mapped to a `SinkFailure` (connection errors and timeouts are retried).
enum SinkHTTP {
    /// Longest response body kept for an error message, in bytes.
    static let maximumErrorBytes = 4096
    /// zlib's level for `compression: gzip`. 1 (fastest): a batch of JSON lines repeats the same keys and label sets
    /// so much that level 1 already shrinks it about tenfold, at a fraction of level 6's CPU, which matters because
    /// forwarding shares the collector's cores with the streams it receives.
    static let gzipLevel: Int32 = 1

    static func post(
        _ client: HTTPClient, url: String, headers: [SinkHeader], body: ByteBuffer, timeout: Duration,
        compression: SinkCompression = .none
    ) async throws(SinkFailure) -> String {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for header in headers { request.headers.add(name: header.name, value: header.value) }
        switch compression {
        case .none:
            request.body = .bytes(body)
        case .gzip:
            request.headers.replaceOrAdd(name: "Content-Encoding", value: "gzip")
            do {
                request.body = .bytes(try StreamCompressor.gzipMember(body, level: Self.gzipLevel))
            } catch {
                throw SinkFailure(.reject, error.message)
            }
        }
        let deadline = TimeAmount.nanoseconds(timeout.nanoseconds)
        do {
            let response = try await client.execute(request, timeout: deadline)
            let text = try await response.body.collect(upTo: 1 << 20)
            let message = String(decoding: text.readableBytesView.prefix(maximumErrorBytes), as: UTF8.self)
            if let failure = SinkFailure.forStatus(Int(response.status.code), body: message) { throw failure }
            return message
        } catch let failure as SinkFailure {
            throw failure
        } catch {
            throw SinkFailure(.retry, "\(url): \(error)")
        }
    }
}

/// The one URL a sink POSTs every batch to, and how: `SinkHTTP.post` with the URL, headers, timeout and body
/// encoding fixed when the sink is made.
struct SinkPostTarget: Sendable {
    let client: HTTPClient
    let url: String
    let headers: [SinkHeader]
    let timeout: Duration
    let compression: SinkCompression

    /// POSTs `body` (`SinkHTTP.post`); returns the response body's text.
    func post(_ body: ByteBuffer) async throws(SinkFailure) -> String {
        try await SinkHTTP.post(client, url: url, headers: headers, body: body, timeout: timeout, compression: compression)
    }
}
