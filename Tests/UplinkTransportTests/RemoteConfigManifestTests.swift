import Testing
import UplinkRemoteConfig
import UplinkTestSupport
@testable import UplinkTransport

@Suite("Remote config: fetching the manifest", .timeLimit(.minutes(2)))
struct RemoteConfigManifestTests {
    typealias T = RemoteConfigTesting

    static let manifest = ConfigManifest(generation: 17, documents: [
        .init(
            name: "base", sha256: SHA256Digest(of: Array("a".utf8)), size: 1,
            signatureSHA256: SHA256Digest(of: Array("b".utf8)), signatureSize: 1),
    ])

    /// One request against a server that answers it with `response`; the result and the request the server saw.
    func fetch(
        _ response: TestHTTPServer.Response, previousETag: String? = nil, labels: [String: String] = [:]
    ) async throws -> (RemoteConfigClient.ManifestResult, TestHTTPServer.Request?) {
        let server = TestHTTPServer { _ in response }
        try await server.start()
        let result = try await T.withClient(url: server.url, labels: labels) { client in
            await client.fetchManifest(previousETag: previousETag)
        }
        await server.stop()
        return (result, server.requests.first)
    }

    @Test("200: the manifest and its ETag; the request names the agent, its labels and its token")
    func manifest() async throws {
        let (result, request) = try await fetch(
            .full(status: 200, headers: [("ETag", "\"g17\"")], body: Self.manifest.json),
            labels: ["site": "b", "role": "edge"])
        #expect(result == .manifest(Self.manifest, etag: "\"g17\""))
        #expect(request?.method == "GET")
        #expect(request?.uri == "/v1/config")
        #expect(request?.header("Uplink-Agent") == T.agentID)
        #expect(request?.header("Uplink-Labels") == "role=edge,site=b")
        #expect(request?.header("Authorization") == "Bearer \(T.token)")
        #expect(request?.header("If-None-Match") == nil)
    }

    @Test("the client closes a kept-alive connection after idleConnectionTimeout, before a collector would (10 s)")
    func idleConnectionsAreClosedFirstByTheClient() async throws {
        // This server never closes an idle connection: only the client's pool can. AsyncHTTPClient's pool times the
        // idle connection on its event loop, not on a clock the test could advance: this waits about 5 s.
        let server = TestHTTPServer { _ in .full(status: 200, headers: [("ETag", "\"g17\"")], body: Self.manifest.json) }
        try await server.start()
        try await T.withClient(url: server.url) { client in
            #expect(await client.fetchManifest(previousETag: nil) == .manifest(Self.manifest, etag: "\"g17\""))
            // Whether the connection is still open right after the answer depends on when this task runs again (a
            // busy machine has left it waiting past the idle timeout), so only its closing is checked: with
            // AsyncHTTPClient's default of 60 s it stays open past this wait.
            let closed = await eventually(timeout: RemoteConfigClient.idleConnectionTimeout * 6) { server.openConnections == 0 }
            #expect(closed, "the idle connection is still open")
        }
        await server.stop()
    }

    @Test("304 answers If-None-Match: not modified")
    func notModified() async throws {
        let (result, request) = try await fetch(.full(status: 304, headers: [], body: []), previousETag: "\"g17\"")
        #expect(result == .notModified)
        #expect(request?.header("If-None-Match") == "\"g17\"")
        #expect(request?.header("Uplink-Labels") == nil)
    }

    @Test("204: nothing assigned; 404: a collector without remote config; 500 and 403: failed, with the body's text")
    func statuses() async throws {
        #expect(try await fetch(.full(status: 204, headers: [], body: [])).0 == .nothingAssigned)
        #expect(try await fetch(.full(status: 404, headers: [], body: Array("not found".utf8))).0 == .unsupported)
        #expect(try await fetch(.full(status: 500, headers: [], body: Array("<h1>boom</h1>".utf8))).0
            == .failed("the collector answered 500: boom"))
        #expect(try await fetch(.full(status: 403, headers: [], body: [])).0 == .failed("the collector answered 403"))
        // 304 without having asked for it is not "unchanged".
        guard case .failed = try await fetch(.full(status: 304, headers: [], body: [])).0 else {
            Issue.record("304 without If-None-Match was taken as not modified")
            return
        }
    }

    @Test("A manifest body that never ends is given up on past 64 KiB; garbage is refused")
    func hostileBodies() async throws {
        let server = TestHTTPServer { _ in .endless(status: 200, headers: [], chunk: [UInt8](repeating: 0x7B, count: 16 * 1024)) }
        try await server.start()
        let result = try await T.withClient(url: server.url) { await $0.fetchManifest(previousETag: nil) }
        #expect(result == .failed("the manifest is larger than \(ConfigManifest.maximumBytes) bytes"))
        await server.stop()
        // What a stopped download can have let through: the limit, the socket buffers, and no more.
        #expect(server.endlessBytesWritten < 64 * 1024 * 1024)

        guard case .failed(let reason) = try await fetch(.full(status: 200, headers: [], body: Array("{\"version\":1".utf8))).0 else {
            Issue.record("a truncated manifest was accepted")
            return
        }
        #expect(reason.hasPrefix("the manifest is invalid"))
    }

    @Test("A manifest that trickles past the request timeout (on the client's clock): failed")
    func manifestDeadline() async throws {
        let server = TestHTTPServer { _ in .stall(status: 200, headers: [], body: Array("{\"version\"".utf8)) }
        try await server.start()
        let clock = ManualClock()
        let timeouts = RemoteConfigClient.Timeouts(connect: .seconds(5), readIdle: .seconds(600), request: .seconds(30))
        let result = try await T.withClient(url: server.url, timeouts: timeouts, clock: clock) { client in
            let task = Task { await client.fetchManifest(previousETag: nil) }
            #expect(await eventually { server.requests.count == 1 && clock.sleepers == 1 })
            clock.advance(by: .seconds(30))
            return await task.value
        }
        #expect(result == .failed("the request took longer than 30.0 seconds"))
        await server.stop()
    }

    @Test("No collector listening: failed, nothing else")
    func noCollector() async throws {
        let port = try FreePort.pick()
        let result = try await T.withClient(url: "http://127.0.0.1:\(port)") { await $0.fetchManifest(previousETag: nil) }
        guard case .failed(let reason) = result else {
            Issue.record("no collector gave \(result)")
            return
        }
        #expect(reason.contains("refused"))
    }
}
