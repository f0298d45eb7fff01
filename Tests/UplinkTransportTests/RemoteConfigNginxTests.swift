import Foundation
import Synchronization
import Testing
import UplinkRemoteConfig
import UplinkTestSupport
@testable import UplinkTransport

/// Blob downloads from a real nginx serving a static directory, as an operator might put in front of (or instead of)
/// the collector's blob endpoint. Under `/v1/config/blobs/` nginx sends our ETag (`"sha256:<hex>"`), so its own
/// `If-Range` check decides between `206` and `200`; under `/own-etag/` it keeps its own ETag (`"<mtime>-<size>"`),
/// which never matches ours, so a resume gets the whole blob again; under `/no-ranges/` byte ranges are off
/// (`max_ranges 0`), so every request gets the whole blob, whatever its `Range` and `If-Range`.
@Suite(
    "Remote config: blob downloads from nginx", .serialized, .timeLimit(.minutes(3)),
    .enabled(if: FileManager.default.isExecutableFile(atPath: TestNginx.binary), "nginx is not installed (/usr/sbin/nginx)"))
struct RemoteConfigNginxTests {
    typealias T = RemoteConfigTesting

    /// nginx serving `blobs` from a static directory; its access log records `Range` and `If-Range`.
    struct StaticBlobs {
        let nginx: TestNginx
        let logPath: String

        /// `status range if-range` of every request, in order.
        func requests() -> [String] {
            ((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
    }

    func withStaticBlobs<R: Sendable>(_ blobs: [[UInt8]], _ body: (StaticBlobs) async throws -> R) async throws -> R {
        let root = try TestDirectories.make("uplink-static-blobs")
        for blob in blobs { T.write(blob, to: root + "/" + SHA256Digest(of: blob).hex) }
        let logPath = root + "/blobs.log"
        let blocks = #"""
                log_format blobs '$status range=$http_range if-range=$http_if_range';
                server {
                    listen 127.0.0.1:@PORT@;
                    access_log \#(logPath) blobs;
                    location ~ "^/v1/config/blobs/sha256:(?<hex>[0-9a-f]{64})$" {
                        etag off;
                        add_header ETag "\"sha256:$hex\"";
                        alias \#(root)/$hex;
                    }
                    location ~ "^/own-etag/v1/config/blobs/sha256:(?<hex>[0-9a-f]{64})$" {
                        alias \#(root)/$hex;
                    }
                    location ~ "^/no-ranges/v1/config/blobs/sha256:(?<hex>[0-9a-f]{64})$" {
                        max_ranges 0;
                        etag off;
                        add_header ETag "\"sha256:$hex\"";
                        alias \#(root)/$hex;
                    }
                }
            """#
        return try await TestNginx.withNginx(.init(upstreamPort: 0, serverBlocks: blocks)) { nginx in
            try await body(StaticBlobs(nginx: nginx, logPath: logPath))
        }
    }

    func download(
        _ client: RemoteConfigClient, _ blob: [UInt8], into directory: String,
        progress: (@Sendable (BlobProgress) -> Void)? = nil
    ) async -> Result<BlobDownload, BlobDownloadFailure> {
        do throws(BlobDownloadFailure) {
            return .success(try await client.downloadBlob(
                SHA256Digest(of: blob), size: blob.count, into: directory, progress: progress))
        } catch {
            return .failure(error)
        }
    }

    @Test("A whole download, then resumes of a .part cut at byte 1, at half and at size − 1: 206, Range and If-Range")
    func downloadAndResume() async throws {
        let blob = T.blob(count: 200_001, seed: 11)
        let hex = SHA256Digest(of: blob).hex
        try await withStaticBlobs([blob]) { server in
            try await T.withClient(url: server.nginx.url) { client in
                let directory = try T.directory()
                let whole = try await download(client, blob, into: directory).get()
                #expect(T.digest(whole.path) == SHA256Digest(of: blob))
                #expect(whole.resumedAt == 0)

                for cut in [1, blob.count / 2, blob.count - 1] {
                    let directory = try T.directory()
                    T.write(Array(blob.prefix(cut)), to: directory + "/" + hex + ".part")
                    let done = try await download(client, blob, into: directory).get()
                    #expect(done.resumedAt == cut)
                    #expect(!done.restarted)
                    #expect(done.bytesReceived == blob.count - cut)
                    #expect(T.digest(done.path) == SHA256Digest(of: blob))
                    #expect(T.files(in: directory) == [hex])
                }
            }
            let ifRange = #"if-range=\x22sha256:"# + hex + #"\x22"#
            #expect(await eventually(timeout: .seconds(10)) { server.requests().count == 4 })
            #expect(server.requests() == [
                "200 range=- if-range=-",
                "206 range=bytes=1- \(ifRange)",
                "206 range=bytes=\(blob.count / 2)- \(ifRange)",
                "206 range=bytes=\(blob.count - 1)- \(ifRange)",
            ])
        }
    }

    @Test(
        "A resume answered with the whole blob, 200: the .part starts over, the result hashes right",
        arguments: [
            // nginx's own ETag (`"<mtime>-<size>"`) does not match our If-Range.
            "/own-etag",
            // Byte ranges off (`max_ranges 0`): Range and If-Range are ignored.
            "/no-ranges",
        ])
    func resumeAnsweredWhole(prefix: String) async throws {
        let blob = T.blob(count: 70_000, seed: 12)
        let hex = SHA256Digest(of: blob).hex
        try await withStaticBlobs([blob]) { server in
            let directory = try T.directory()
            T.write(Array(blob.prefix(35_000)), to: directory + "/" + hex + ".part")
            let done = try await T.withClient(url: server.nginx.url + prefix) { client in
                try await download(client, blob, into: directory).get()
            }
            #expect(done.restarted)
            #expect(done.bytesReceived == blob.count)
            #expect(T.digest(done.path) == SHA256Digest(of: blob))
            #expect(T.files(in: directory) == [hex])
            let ifRange = #"if-range=\x22sha256:"# + hex + #"\x22"#
            #expect(await eventually(timeout: .seconds(10)) { server.requests().count == 1 })
            #expect(server.requests() == ["200 range=bytes=35000- \(ifRange)"])
        }
    }

    @Test("Through an nginx that terminates TLS and requires a client certificate: the manifest and a blob with mTLS, 400 without")
    func mutualTLS() async throws {
        let pki = try await TestPKI("remote-config")
        let blob = T.blob(count: 5000, seed: 14)
        let digest = SHA256Digest(of: blob)
        let manifest = ConfigManifest(generation: 3, documents: [
            .init(name: "base", sha256: digest, size: blob.count, signatureSHA256: digest, signatureSize: blob.count),
        ])
        let blobs = T.blobResponder([digest: blob])
        let collector = TestHTTPServer { request in
            request.uri == "/v1/config" ? .full(status: 200, headers: [("ETag", "\"m3\"")], body: manifest.json) : blobs(request)
        }
        let port = try await collector.start()
        let tls = TestNginx.Configuration.TLS(certificate: pki.server, clientCAFile: pki.authority.certificateFile)
        try await TestNginx.withNginx(.init(upstreamPort: port, tls: tls)) { nginx in
            // The URL names the address, the certificate `localhost`: `server_name` bridges them, as in a fleet.
            let mutual = UplinkTLS(
                caFile: pki.authority.certificateFile, certificateFile: pki.agent.certificateFile, keyFile: pki.agent.keyFile,
                serverName: "localhost")
            try await T.withClient(url: nginx.url, tls: mutual) { client in
                #expect(await client.fetchManifest(previousETag: nil) == .manifest(manifest, etag: "\"m3\""))
                let directory = try T.directory()
                let done = try await client.downloadBlob(digest, size: blob.count, into: directory)
                #expect(T.digest(done.path) == SHA256Digest(of: blob))
            }
            #expect(collector.requests.first?.header("Uplink-Agent") == T.agentID)
            #expect(collector.requests.first?.header("Authorization") == "Bearer \(T.token)")

            let serverOnly = UplinkTLS(caFile: pki.authority.certificateFile, serverName: "localhost")
            let refused = try await T.withClient(url: nginx.url, tls: serverOnly) { await $0.fetchManifest(previousETag: nil) }
            #expect(refused == .failed("the collector answered 400: 400 Bad Request No required SSL certificate was sent"))
        }
        await collector.stop()
    }

    @Test("A connection cut by the fault proxy mid-body keeps the .part; the next attempt resumes through nginx")
    func cutByProxy() async throws {
        // Larger than what the sockets between nginx and the client can hold once the proxy stops forwarding.
        let block = T.blob(count: 64 * 1024, seed: 13)
        let blob = (0..<512).flatMap { index in [UInt8(index & 0xFF), UInt8(index >> 8)] + block.dropFirst(2) }
        let hex = SHA256Digest(of: blob).hex
        try await withStaticBlobs([blob]) { server in
            let proxy = FaultProxy(upstreamPort: server.nginx.port)
            try await proxy.start()
            let directory = try T.directory()
            let part = directory + "/" + hex + ".part"
            let cutDone = Mutex(false)
            try await T.withClient(url: "http://127.0.0.1:\(proxy.port)") { client in
                let first = await download(client, blob, into: directory) { progress in
                    guard progress.bytesWritten > 0, !cutDone.withLock({ $0 }) else { return }
                    cutDone.withLock { $0 = true }
                    proxy.setStalled(true)
                    proxy.cutAllConnections()
                }
                switch first {
                case .failure(.transport), .failure(.incomplete): break
                default: Issue.record("a cut download gave \(first)")
                }
                let partial = T.contents(part) ?? []
                let kept = partial.count
                #expect(kept > 0 && kept < blob.count, "the .part holds \(kept) bytes")
                #expect(partial.elementsEqual(blob.prefix(kept)))

                proxy.setStalled(false)
                let done = try await download(client, blob, into: directory).get()
                #expect(done.resumedAt == kept)
                #expect(T.digest(done.path) == SHA256Digest(of: blob))
                #expect(await eventually(timeout: .seconds(10)) {
                    server.requests().contains { $0.hasPrefix("206 range=bytes=\(kept)- if-range=") }
                })
            }
            try await proxy.stop()
        }
    }
}
