import Foundation
import Logging
import UplinkRemoteConfig
import UplinkTestSupport
@testable import UplinkTransport

/// What the remote configuration client's tests share: a client pointed at a test server, blobs of known content,
/// a blob server that behaves like the collector's (or does not), and looks at the download directory.
enum RemoteConfigTesting {
    static let agentID = "edge-7"
    static let token = "s3cret"

    /// Runs `body` with a client of `url` and shuts the client down afterwards.
    static func withClient<T: Sendable>(
        url: String, labels: [String: String] = [:], timeouts: RemoteConfigClient.Timeouts = .init(),
        tls: UplinkTLS = UplinkTLS(), clock: any Clock<Duration> = ContinuousClock(),
        _ body: (RemoteConfigClient) async throws -> T
    ) async throws -> T {
        let client = RemoteConfigClient(
            uplink: UplinkConfiguration(url: url, agentID: agentID, token: token, tls: tls), labels: labels,
            timeouts: timeouts, logger: Logger(label: "remote-config-test"), clock: clock)
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try await client.shutdown()
            throw error
        }
    }

    /// `count` bytes from a seeded generator (every run the same).
    static func blob(count: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }

    /// A fresh download directory.
    static func directory() throws -> String {
        try TestDirectories.make("uplink-blobs")
    }

    /// The files in `directory`, sorted.
    static func files(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
    }

    static func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { Array($0) }
    }

    /// The digest of the file at `path` (what tests compare: a failure then prints two digests, not two blobs).
    static func digest(_ path: String) -> SHA256Digest? {
        contents(path).map { SHA256Digest(of: $0) }
    }

    static func write(_ bytes: [UInt8], to path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    }

    /// How a test blob server treats `Range`.
    enum RangeBehaviour: Sendable {
        /// As the collector: `206` for `Range` when `If-Range` matches the blob's ETag, else `200`.
        case honour
        /// As a server without ranges: always `200`.
        case ignore
        /// `206` with a `Content-Range` that starts one byte later than asked.
        case wrongContentRange
    }

    /// Answers `GET /v1/config/blobs/sha256:<hex>` for the blobs in `blobs` (by digest) like the collector does.
    static func blobResponder(
        _ blobs: [SHA256Digest: [UInt8]], range: RangeBehaviour = .honour
    ) -> @Sendable (TestHTTPServer.Request) -> TestHTTPServer.Response {
        { request in
            let prefix = "/v1/config/blobs/"
            guard request.uri.hasPrefix(prefix), let digest = SHA256Digest(prefixed: request.uri.dropFirst(prefix.count)),
                let bytes = blobs[digest]
            else { return .full(status: 404, headers: [], body: Array("no such blob\n".utf8)) }
            let etag = "\"\(digest.prefixed)\""
            let headers = [("ETag", etag), ("Accept-Ranges", "bytes"), ("Content-Type", "application/octet-stream")]
            if range != .ignore, let header = request.header("Range"), header.hasPrefix("bytes="), header.hasSuffix("-"),
                let start = Int(header.dropFirst("bytes=".count).dropLast()), start < bytes.count,
                request.header("If-Range") == nil || request.header("If-Range") == etag
            {
                let first = range == .wrongContentRange ? start + 1 : start
                return .full(
                    status: 206, headers: headers + [("Content-Range", "bytes \(first)-\(bytes.count - 1)/\(bytes.count)")],
                    body: Array(bytes[first...]))
            }
            return .full(status: 200, headers: headers, body: bytes)
        }
    }
}
