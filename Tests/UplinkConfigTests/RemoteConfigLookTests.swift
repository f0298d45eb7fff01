import Foundation
import Logging
import Synchronization
import Testing
@testable import UplinkAgent
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig
import UplinkTestSupport
import UplinkTransport

/// One look at the collector at a time (`RemoteConfigAgent.check`), against a real HTTP server: which refusals are
/// remembered (the revision is not looked at again until the local file changes) and which failures make the look
/// fail, so that it is tried again soon and the manifest's ETag is not kept.
@Suite("Remote config: what a look remembers", .timeLimit(.minutes(2)))
struct RemoteConfigLookTests {
    typealias RemoteAgent = RemoteConfigAgent<ContinuousClock>

    /// A collector that serves `set` (its manifest with an ETag, its documents and envelopes) once one is given.
    final class Collector: Sendable {
        /// What it serves: nothing (204) until a set is given.
        final class Served: Sendable {
            let set = Mutex<RemoteConfigStore.DocumentSet?>(nil)
            /// Documents (not envelopes) are answered with a few bytes, then nothing more.
            let stallsDocuments = Mutex(false)
        }

        let served = Served()
        let server: TestHTTPServer

        init() {
            let served = self.served
            server = TestHTTPServer { request in
                guard let set = served.set.withLock({ $0 }), request.uri != "/v1/config/status" else {
                    return .full(status: 204, headers: [], body: [])
                }
                if request.uri == "/v1/config" {
                    return .full(status: 200, headers: [("ETag", "\"\(set.revision.hex)\"")], body: set.manifest.json)
                }
                var blobs: [String: [UInt8]] = [:]
                for document in set.documents {
                    let digest = SHA256Digest(of: document.content).prefixed
                    if request.uri.hasSuffix(digest), served.stallsDocuments.withLock({ $0 }) {
                        return .stall(status: 200, headers: [], body: Array(document.content.prefix(3)))
                    }
                    blobs[digest] = document.content
                    if let envelope = document.envelope { blobs[SHA256Digest(of: envelope.json).prefixed] = envelope.json }
                }
                guard let bytes = blobs[String(request.uri.dropFirst("/v1/config/blobs/".count))] else {
                    return .full(status: 404, headers: [], body: [])
                }
                return .full(status: 200, headers: [], body: bytes)
            }
        }

        var manifestRequests: [TestHTTPServer.Request] { server.requests.filter { $0.uri == "/v1/config" } }
    }

    /// A box trusting `RemoteConfigStoreTests.key` whose collector is `url`, and its remote configuration, its
    /// requests given up on after `timeouts`.
    static func box(url: String, timeouts: RemoteConfigClient.Timeouts = .init()) throws -> (RemoteAgent, root: String) {
        let root = try TestDirectories.make("uplink-remote-look")
        let key = RemoteConfigStoreTests.key
        try AtomicFile.write(
            Array(SigningKeyFile.publicText(SigningKeyFile.TrustedKey(id: key.id, key: key.key.publicKey)).utf8),
            to: root + "/ops.pub")
        let local = try RemoteConfigStoreTests.localFile(root: root, url: url)
        let logger = Logger(label: "remote-look-test")
        let store = RemoteConfigStore(stateDirectory: local.agent.stateDirectory)
        let agent = Agent(configuration: local.agentConfiguration(embedded: nil, environment: [:]), logger: logger)
        let remote = RemoteAgent(
            startup: RemoteAgent.startup(local: local, store: store, logger: logger), local: local, store: store,
            client: {
                RemoteConfigClient(
                    uplink: $0.agentConfiguration(embedded: nil, environment: [:]).uplink, timeouts: timeouts, logger: logger,
                    clock: ContinuousClock())
            },
            configuration: RunningConfiguration(agent: agent, local: local, embedded: nil), agent: agent,
            clock: ContinuousClock(), logger: logger)
        return (remote, root)
    }

    static let cpu = "sources:\n  - { name: remote-cpu, type: cpu, interval: 10s }\n"

    @Test("An expired envelope is refused but not remembered (the box's clock may be wrong); a bad signature is remembered, its document never fetched; an unsigned one fetches nothing")
    func expiredIsNotRemembered() async throws {
        let collector = Collector()
        try await collector.server.start()
        let (remote, _) = try Self.box(url: collector.server.url)

        let expired = try RemoteConfigStoreTests.documentSet(["lab": (Self.cpu, 3)], notAfter: 1_000_000_000)
        collector.served.set.withLock { $0 = expired }
        #expect(await remote.check() == .done)
        #expect(remote.status.state == .failed && remote.status.error?.contains("expired") == true, "\(remote.status)")
        #expect(remote.rememberedRefusals.isEmpty)

        // Signed by a key the box does not trust: that stays refused for this local file.
        var untrusted = try RemoteConfigStoreTests.documentSet(["lab": (Self.cpu + "# other key\n", 4)])
        let other = SigningKeyFile.SigningKey(id: "other", key: Ed25519.SecretKey(seed: [UInt8](repeating: 9, count: 32))!)
        let content = untrusted.documents[0].content
        let envelope = ConfigEnvelope.sign(document: content, name: "lab", serial: 4, audience: .everyone, notAfter: 4_000_000_000, with: other)
        let manifest = ConfigManifest(generation: 2, documents: [.init(
            name: "lab", sha256: SHA256Digest(of: content), size: content.count,
            signatureSHA256: SHA256Digest(of: envelope.json), signatureSize: envelope.json.count)])
        untrusted = try RemoteConfigStore.DocumentSet(manifest: manifest) { _, part in part == .document ? content : envelope.json }
        collector.served.set.withLock { $0 = untrusted }
        #expect(await remote.check() == .done)
        #expect(remote.status.error?.contains("not in remote_config.trusted_keys") == true, "\(remote.status)")
        #expect(remote.rememberedRefusals.keys.contains(untrusted.revision))
        // Refused from its envelope: the document itself was never fetched.
        let blobRequests = collector.server.requests.map(\.uri).filter { $0.hasPrefix("/v1/config/blobs/") }
        #expect(blobRequests.contains("/v1/config/blobs/" + SHA256Digest(of: envelope.json).prefixed), "\(blobRequests)")
        #expect(!blobRequests.contains("/v1/config/blobs/" + SHA256Digest(of: content).prefixed), "\(blobRequests)")

        // Unsigned, to a box that requires signatures: refused from the manifest, nothing fetched.
        let unsigned = try RemoteConfigStoreTests.documentSet(["lab": (Self.cpu + "# unsigned\n", 5)], unsigned: ["lab"])
        collector.served.set.withLock { $0 = unsigned }
        let fetched = blobRequests.count
        #expect(await remote.check() == .done)
        #expect(remote.status.error?.contains("without an envelope (unsigned)") == true, "\(remote.status)")
        #expect(collector.server.requests.filter { $0.uri.hasPrefix("/v1/config/blobs/") }.count == fetched)
        await remote.shutdown()
        await collector.server.stop()
    }

    @Test("An unreadable seen.json or a trial marker that cannot be written fail the look: not remembered, no ETag kept")
    func localProblemsFailTheLook() async throws {
        let collector = Collector()
        try await collector.server.start()
        let (remote, root) = try Self.box(url: collector.server.url)
        let set = try RemoteConfigStoreTests.documentSet(["lab": (Self.cpu, 3)])
        collector.served.set.withLock { $0 = set }
        let remoteDirectory = root + "/state/remote"
        try FileManager.default.createDirectory(atPath: remoteDirectory, withIntermediateDirectories: true)

        try AtomicFile.write(Array("not json".utf8), to: remoteDirectory + "/seen.json")
        #expect(await remote.check() == .failed)
        #expect(remote.status.error?.contains("seen.json cannot be read") == true, "\(remote.status)")
        #expect(remote.rememberedRefusals.isEmpty)

        // seen.json put right; a directory where trial.json goes: the probation cannot begin.
        try FileManager.default.removeItem(atPath: remoteDirectory + "/seen.json")
        try FileManager.default.createDirectory(atPath: remoteDirectory + "/trial.json/x", withIntermediateDirectories: true)
        #expect(await remote.check() == .failed)
        #expect(remote.status.error?.contains("cannot write the trial marker") == true, "\(remote.status)")
        #expect(remote.status.state != .applying)
        // No ETag was kept from either look: each asked for the whole manifest.
        #expect(collector.manifestRequests.count == 2)
        #expect(collector.manifestRequests.allSatisfy { $0.header("If-None-Match") == nil })
        await remote.shutdown()
        await collector.server.stop()
    }

    @Test("A reload during a download that does not progress ends it at once; the next look goes on under the new file")
    func reloadInterruptsADownload() async throws {
        let collector = Collector()
        try await collector.server.start()
        // No timeout ends the stalled download within the test's time limit: only the reload can.
        let (remote, _) = try Self.box(
            url: collector.server.url, timeouts: .init(readIdle: .seconds(3_600), request: .seconds(3_600)))
        let set = try RemoteConfigStoreTests.documentSet(["lab": (Self.cpu, 3)])
        collector.served.stallsDocuments.withLock { $0 = true }
        collector.served.set.withLock { $0 = set }
        let document = "/v1/config/blobs/" + set.manifest.documents[0].sha256.prefixed
        let look = Task { await remote.check() }
        #expect(await eventually(timeout: .seconds(30)) { collector.server.requests.contains { $0.uri == document } })
        remote.localFileChanged()
        #expect(await look.value == .failed)
        #expect(remote.status.state != .applying)
        #expect(remote.status.error == nil, "interrupted, not failed: \(remote.status)")
        await remote.shutdown()
        await collector.server.stop()
    }
}
