import Foundation
import Logging
import Testing
import UplinkAgent
import UplinkCore
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
        _ store: RemoteConfigStore, _ manifest: ConfigManifest, _ client: RemoteConfigClient, limit: Int = 1 << 20
    ) async -> Result<RemoteConfigStore.DocumentSet, RemoteConfigStore.DownloadFailure> {
        do throws(RemoteConfigStore.DownloadFailure) {
            return .success(try await store.download(manifest, with: client, maximumDocumentBytes: limit))
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
            #expect(await download(store, set.manifest, client) == .failure(.blob(name: "base", part: .document, .status(404))))
        }
        await server.stop()
    }
}
