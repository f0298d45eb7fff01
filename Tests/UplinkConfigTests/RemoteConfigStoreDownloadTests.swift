import Foundation
import Logging
import Testing
import UplinkAgent
import Synchronization
import UplinkCore
import UplinkFiles
import UplinkObservability
import UplinkRemoteConfig
import UplinkTestSupport
import UplinkTransport

/// A manifest's whole set fetched into `blobs/` and read back, against a test server that serves blobs by digest.
@Suite("Remote config: downloading a set into the store", .timeLimit(.minutes(2)))
struct RemoteConfigStoreDownloadTests {
    /// Serves each of `set`'s documents and envelopes at `/v1/config/blobs/sha256:<hex>`, whole.
    static func server(for set: RemoteConfigStore.DocumentSet) -> TestHTTPServer {
        var blobs: [String: [UInt8]] = [:]
        for (entry, document) in zip(set.manifest.documents, set.documents) {
            blobs["/v1/config/blobs/" + entry.sha256.prefixed] = document.content
            if let envelope = entry.envelope { blobs["/v1/config/blobs/" + envelope.sha256.prefixed] = document.envelopeJSON }
        }
        return TestHTTPServer { [blobs] request in
            guard let bytes = blobs[request.uri] else { return .full(status: 404, headers: [], body: []) }
            return .full(status: 200, headers: [], body: bytes)
        }
    }

    func withClient<T: Sendable>(_ url: String, _ body: (RemoteConfigClient) async throws -> T) async throws -> T {
        let client = RemoteConfigClient(
            uplink: UplinkConfiguration(url: url, agentID: "edge-1"), logger: Logger(label: "test"), clock: ContinuousClock())
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try await client.shutdown()
            throw error
        }
    }

    func download(
        _ store: RemoteConfigStore, _ manifest: ConfigManifest, _ client: RemoteConfigClient, limit: Int = 1 << 20,
        metrics: RemoteConfigDownloadMetrics = RemoteConfigDownloadMetrics()
    ) async -> Result<RemoteConfigStore.DocumentSet, RemoteConfigStore.DownloadFailure> {
        do throws(RemoteConfigStore.DownloadFailure) {
            return .success(try await store.download(manifest, with: client, maximumDocumentBytes: limit, metrics: metrics))
        } catch {
            return .failure(error)
        }
    }

    @Test("Every document and envelope fetched, the set read back; a stale download of another blob removed; fetched once")
    func wholeSet() async throws {
        let set = try RemoteConfigStoreTests.documentSet(["base": ("sources: {}\n", 2), "gpu": ("sources:\n  g: {type: sysfs}\n", 1)])
        let store = RemoteConfigStore(stateDirectory: try TestDirectories.make("uplink-remote-download"))
        try store.prepare()
        let stale = store.blobPath(SHA256Digest(of: [42])) + ".part"
        try AtomicFile.write([42], to: stale)
        let server = Self.server(for: set)
        try await server.start()
        try await withClient(server.url) { client in
            let first = await download(store, set.manifest, client)
            #expect(first == .success(set))
            #expect(!FileManager.default.fileExists(atPath: stale))
            #expect(server.requests.count == 4)
            // Everything is there: a second call asks for nothing.
            let second = await download(store, set.manifest, client)
            #expect(second == .success(set))
            #expect(server.requests.count == 4)
        }
        await server.stop()
    }

    @Test("A document above max_document_bytes fails the set before anything is fetched; a missing blob names itself")
    func refusals() async throws {
        let set = try RemoteConfigStoreTests.documentSet(["base": ("sources: {}\n", 2)])
        let store = RemoteConfigStore(stateDirectory: try TestDirectories.make("uplink-remote-download"))
        try store.prepare()
        let server = TestHTTPServer { _ in .full(status: 404, headers: [], body: []) }
        try await server.start()
        try await withClient(server.url) { client in
            let size = set.manifest.documents[0].size
            #expect(await download(store, set.manifest, client, limit: size - 1)
                == .failure(.documentTooLarge(name: "base", size: size, limit: size - 1)))
            #expect(server.requests.isEmpty)
            // The envelope is fetched first.
            #expect(await download(store, set.manifest, client) == .failure(.blob(name: "base", part: .envelope, .status(404))))
        }
        await server.stop()
    }

    /// The value of the series `series` (name and labels, as rendered) in `exposition`; 0 when absent.
    static func value(_ series: String, in exposition: MetricsExposition) -> Int {
        let text = String(decoding: exposition.render(), as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Int(Double(line.dropFirst(series.count + 1)) ?? -1)
        }
        return 0
    }

    @Test("Counters: a download cut mid-body is failed, its resume is resumed; a Range answered 200 is restarted; bytes add up")
    func counters() async throws {
        let padding = String(repeating: "# padding to make the body worth cutting\n", count: 2_000)
        let first = try RemoteConfigStoreTests.documentSet(["base": ("sources: {}\n" + padding, 1)])
        let second = try RemoteConfigStoreTests.documentSet(["gpu": ("sources: {}\n# gpu\n" + padding, 1)])
        let base = first.manifest.documents[0]
        let gpu = second.manifest.documents[0]
        let blobs = [
            base.sha256: first.documents[0].content, try #require(base.envelope).sha256: first.documents[0].envelopeJSON!,
            gpu.sha256: second.documents[0].content, try #require(gpu.envelope).sha256: second.documents[0].envelopeJSON!,
        ]
        // base: the first answer is cut at half, a Range is answered 206. gpu: cut at a third, a Range answered 200.
        let server = TestHTTPServer { [blobs] request in
            let prefix = "/v1/config/blobs/"
            guard request.uri.hasPrefix(prefix), let digest = SHA256Digest(prefixed: request.uri.dropFirst(prefix.count)),
                let bytes = blobs[digest]
            else { return .full(status: 404, headers: [], body: []) }
            let cut = digest == base.sha256 ? bytes.count / 2 : digest == gpu.sha256 ? bytes.count / 3 : nil
            guard let cut else { return .full(status: 200, headers: [], body: bytes) }
            guard let range = request.header("Range") else {
                return .cut(status: 200, headers: [], body: Array(bytes.prefix(cut)), announced: bytes.count)
            }
            guard digest == base.sha256, range.hasPrefix("bytes="), range.hasSuffix("-"),
                let start = Int(range.dropFirst("bytes=".count).dropLast()), start < bytes.count
            else { return .full(status: 200, headers: [], body: bytes) }
            return .full(
                status: 206, headers: [("Content-Range", "bytes \(start)-\(bytes.count - 1)/\(bytes.count)")],
                body: Array(bytes[start...]))
        }
        try await server.start()
        let exposition = MetricsExposition()
        let metrics = RemoteConfigDownloadMetrics(factory: exposition.factory)
        func count(_ result: String) -> Int {
            Self.value(#"uplink_remote_config_downloads_total{result="\#(result)"}"#, in: exposition)
        }
        let bytes = { Self.value("uplink_remote_config_download_bytes_total", in: exposition) }
        let store = RemoteConfigStore(stateDirectory: try TestDirectories.make("uplink-remote-download"))
        try store.prepare()
        func partLength(_ digest: SHA256Digest) -> Int {
            ((try? FileManager.default.attributesOfItem(atPath: store.blobPath(digest) + ".part"))?[.size] as? Int) ?? 0
        }
        try await withClient(server.url) { client in
            // The envelope whole (it comes first), then the document cut: not in place, the half received is on
            // disk and counted.
            let cut = await download(store, first.manifest, client, metrics: metrics)
            guard case .failure(.blob(name: "base", part: .document, _)) = cut else {
                Issue.record("a cut download gave \(cut)")
                return
            }
            let kept = partLength(base.sha256)
            #expect(kept > 0 && kept <= base.size / 2, "the .part holds \(kept) bytes")
            #expect(count("failed") == 1)
            #expect(count("resumed") == 0 && count("complete") == 1)
            #expect(bytes() == base.envelope!.size + kept)
            // Resumed from the .part (Range answered 206); the envelope already there.
            #expect(await download(store, first.manifest, client, metrics: metrics) == .success(first))
            #expect(server.requests.last { $0.uri.hasSuffix(base.sha256.hex) }?.header("Range") == "bytes=\(kept)-")
            #expect(count("resumed") == 1)
            #expect(count("complete") == 1)
            #expect(count("failed") == 1)
            #expect(bytes() == base.envelope!.size + base.size)
            // Already there: no download, nothing counted.
            #expect(await download(store, first.manifest, client, metrics: metrics) == .success(first))
            #expect(count("resumed") == 1 && count("complete") == 1)

            // Cut, then the Range answered with the whole blob: started over.
            _ = await download(store, second.manifest, client, metrics: metrics)
            let keptGPU = partLength(gpu.sha256)
            #expect(keptGPU > 0)
            #expect(count("failed") == 2)
            #expect(await download(store, second.manifest, client, metrics: metrics) == .success(second))
            #expect(count("restarted") == 1)
            #expect(count("complete") == 2)
            #expect(count("resumed") == 1)
            #expect(bytes() == base.size + base.envelope!.size + keptGPU + gpu.size + gpu.envelope!.size)
        }
        await server.stop()
    }
}
