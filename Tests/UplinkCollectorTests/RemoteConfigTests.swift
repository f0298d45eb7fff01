import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Testing
import UplinkCore
import UplinkRemoteConfig
import UplinkTestSupport
import UplinkWire

@testable import UplinkCollector

/// A `collector.remote_config.dir` a test lays out: real key files, documents signed with `ConfigEnvelope.sign`.
struct RemoteConfigFixture {
    let directory: String
    let key: SigningKeyFile.SigningKey
    let publicKeyPath: String

    init(_ root: String) throws {
        directory = root + "/fleet"
        try FileManager.default.createDirectory(atPath: directory + "/documents", withIntermediateDirectories: true)
        key = SigningKeyFile.SigningKey(id: "ops-2026", key: Ed25519.SecretKey.generate())
        publicKeyPath = root + "/ops-2026.pub"
        try SigningKeyFile.publicText(SigningKeyFile.TrustedKey(id: key.id, key: key.key.publicKey))
            .write(toFile: publicKeyPath, atomically: true, encoding: .utf8)
    }

    var settings: RemoteConfigSettings {
        RemoteConfigSettings(directory: directory, trustedKeys: [publicKeyPath])
    }

    /// Writes `documents/<name>.yaml` and its envelope, signed as `signedName` with `key` (or the fixture's).
    @discardableResult
    func document(
        _ name: String, _ text: String, serial: UInt64 = 1, signedName: String? = nil,
        key other: SigningKeyFile.SigningKey? = nil, signed: Bool = true
    ) throws -> (document: [UInt8], envelope: [UInt8]) {
        let bytes = Array(text.utf8)
        let path = directory + "/documents/\(name).yaml"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        guard signed else {
            try? FileManager.default.removeItem(atPath: path + ".sig")
            return (bytes, [])
        }
        let envelope = ConfigEnvelope.sign(
            document: bytes, name: signedName ?? name, serial: serial, audience: .everyone,
            notAfter: 4_102_444_800, with: other ?? key)
        try Data(envelope.json).write(to: URL(fileURLWithPath: path + ".sig"))
        return (bytes, envelope.json)
    }

    func assignments(_ text: String) throws {
        try text.write(toFile: directory + "/assignments.yaml", atomically: true, encoding: .utf8)
    }

    func inventory(_ text: String) throws {
        try text.write(toFile: directory + "/inventory.yaml", atomically: true, encoding: .utf8)
    }

    func remove(_ name: String) throws {
        try FileManager.default.removeItem(atPath: directory + "/documents/\(name).yaml")
        try? FileManager.default.removeItem(atPath: directory + "/documents/\(name).yaml.sig")
    }
}

/// The test's stand-in for the agent's validator: a document must start with `sources:`.
let sourcesOnlyValidator: RemoteDocumentValidator = { _, bytes, _ in
    String(decoding: bytes, as: UTF8.self).hasPrefix("sources:") ? [] : ["only a sources list is allowed"]
}

let tailDocument = "sources:\n  - name: app\n    type: tail\n    paths: [/var/log/app.log]\n"
let cpuDocument = "sources:\n  - name: cpu\n    type: cpu\n    interval: 10s\n"

func remoteConfiguration(_ root: String, _ settings: RemoteConfigSettings, tls: CollectorTLS? = nil) -> CollectorConfiguration {
    var configuration = testConfiguration(root + "/data")
    configuration.stdoutSink = false
    configuration.remoteConfig = settings
    configuration.tls = tls
    return configuration
}

/// A collector serving the document `base` to every agent behind the token `s3cret`, and a client for it.
func withGuardedCollector(_ body: (Collector, Int, HTTPClient) async throws -> Void) async throws {
    try await withTemporaryDirectory { root in
        let fixture = try RemoteConfigFixture(root)
        try fixture.document("base", tailDocument)
        try fixture.assignments("generation: 1\nassign:\n  - {name: all, documents: [base]}\n")
        var configuration = remoteConfiguration(root, fixture.settings)
        configuration.token = "s3cret"
        try await withRemoteCollector(configuration) { collector, port in
            try await withClient { client in try await body(collector, port, client) }
        }
    }
}

func withRemoteCollector<T>(
    _ configuration: CollectorConfiguration, logger: Logger = testLogger, _ body: (Collector, Int) async throws -> T
) async throws -> T {
    try await withCollector(configuration, logger: logger, documentValidator: sourcesOnlyValidator, body)
}

/// An answer as a test reads it.
struct Answer {
    var status: HTTPResponseStatus
    var headers: HTTPHeaders
    var body: [UInt8]

    func header(_ name: String) -> String? { headers.first(name: name) }
}

func request(
    _ client: HTTPClient, port: Int, _ path: String, agent: String?, method: HTTPMethod = .GET,
    headers: [(String, String)] = [], body: [UInt8]? = nil, scheme: String = "http"
) async throws -> Answer {
    var request = HTTPClientRequest(url: "\(scheme)://127.0.0.1:\(port)\(path)")
    request.method = method
    if let agent { request.headers.add(name: "Uplink-Agent", value: agent) }
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
    let response = try await client.execute(request, timeout: .seconds(30))
    let bytes = try await response.body.collect(upTo: 8 << 20)
    return Answer(status: response.status, headers: response.headers, body: Array(bytes.readableBytesView))
}

@Suite("Remote configuration: collector")
struct RemoteConfigTests {
    @Test("collector.remote_config decodes with its defaults; each problem is named at file:line:col and key")
    func decoding() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            let (collector, issues) = decodeCollectorSection("""
                collector:
                  remote_config:
                    dir: \(fixture.directory)
                    trusted_keys: [ops-2026.pub]
                """, file: root + "/c.yaml")
            #expect(issues == [])
            #expect(collector?.remoteConfig == RemoteConfigSettings(
                directory: fixture.directory, requireSignature: true, trustedKeys: [fixture.publicKeyPath],
                labelsFrom: [.certificate, .inventory]))

            let (_, problems) = decodeCollectorSection("""
                collector:
                  remote_config:
                    dir: fleet
                    trusted_keys: [missing.pub]
                    labels_from: [agent, neighbours, agent]
                    hint_jitter: 30s
                """, file: root + "/c.yaml")
            #expect(problems.count == 5, "\(problems)")
            #expect(problems.contains { $0.hasPrefix("\(root)/c.yaml:3:10: collector.remote_config.dir: 'fleet' is not an absolute path") })
            #expect(problems.contains { $0.hasPrefix("\(root)/c.yaml:4:20: collector.remote_config.trusted_keys[0]: \(root)/missing.pub") })
            #expect(problems.contains { $0.hasPrefix("\(root)/c.yaml:5:26: collector.remote_config.labels_from[1]: 'neighbours'") })
            #expect(problems.contains { $0.hasPrefix("\(root)/c.yaml:5:38: collector.remote_config.labels_from[2]: 'agent' is listed twice") })
            #expect(problems.contains { $0.contains("collector.remote_config.hint_jitter") })

            let (_, unsigned) = decodeCollectorSection("collector:\n  remote_config: {dir: /srv/fleet}\n")
            #expect(unsigned.count == 1)
            #expect(unsigned.first?.contains("require_signature is true, and no trusted key is listed") == true)
            let (relaxed, none) = decodeCollectorSection("collector:\n  remote_config: {dir: /srv/fleet, require_signature: false}\n")
            #expect(none == [])
            #expect(relaxed?.remoteConfig?.requireSignature == false)
        }
    }

    @Test("Problems in assignments.yaml and inventory.yaml are named at file:line:col and key")
    func assignmentProblems() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("base", tailDocument)
            try fixture.assignments("""
                generation: 1
                assign:
                  - {name: a, documents: [base, missing]}
                  - {name: a, documents: [base], colour: red}
                  - name: b
                    documents: [base]
                    rollout: {stages: [{percent: 101}], current_stage: 3}

                """)
            try fixture.inventory("edge-1: [not, a, mapping]\n")
            guard case .failure(let failure) = RemoteConfigSet.load(fixture.settings, validator: sourcesOnlyValidator) else {
                Issue.record("a directory with problems was loaded")
                return
            }
            let path = fixture.directory + "/assignments.yaml"
            let problems = failure.problems
            #expect(problems.contains { $0.hasPrefix("\(path):3:33: assign[0].documents[1]: no document 'missing'") }, "\(problems)")
            #expect(problems.contains { $0.hasPrefix("\(path):4:12: assign[1].name: rule name 'a' is used twice") }, "\(problems)")
            #expect(problems.contains { $0.hasPrefix("\(path):4:34: assign[1].colour") }, "\(problems)")
            #expect(problems.contains { $0.contains("assign[2].rollout.stages[0].percent") }, "\(problems)")
            #expect(problems.contains { $0.contains("assign[2].rollout.current_stage: stage 3 does not exist") }, "\(problems)")
            #expect(problems.contains { $0.hasPrefix(fixture.directory + "/inventory.yaml:1:9: edge-1") }, "\(problems)")
        }
    }

    @Test("GET /v1/config: 200 with the manifest and a strong ETag, 304 for If-None-Match, 204 when nothing is assigned")
    func manifest() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            let (document, envelope) = try fixture.document("base", tailDocument)
            try fixture.assignments("generation: 3\nassign:\n  - name: edges\n    match: {agents: [\"edge-*\"]}\n    documents: [base]\n")
            try await withRemoteCollector(remoteConfiguration(root, fixture.settings)) { _, port in
                try await withClient { client in
                    let answer = try await request(client, port: port, "/v1/config", agent: "edge-1")
                    #expect(answer.status == .ok)
                    let manifest = try ConfigManifest(json: answer.body)
                    #expect(manifest.generation == 3)
                    #expect(manifest.documents == [
                        ConfigManifest.Document(
                            name: "base", sha256: SHA256Digest(of: document), size: document.count,
                            signatureSHA256: SHA256Digest(of: envelope), signatureSize: envelope.count)
                    ])
                    let etag = try #require(answer.header("ETag"))
                    #expect(etag == "\"\(manifest.revision.prefixed)-3\"")
                    let again = try await request(client, port: port, "/v1/config", agent: "edge-1", headers: [("If-None-Match", etag)])
                    #expect(again.status == .notModified)
                    #expect(again.body.isEmpty)
                    let stale = try await request(
                        client, port: port, "/v1/config", agent: "edge-1", headers: [("If-None-Match", "\"sha256:00-3\"")])
                    #expect(stale.status == .ok)
                    let nothing = try await request(client, port: port, "/v1/config", agent: "core-1")
                    #expect(nothing.status == .noContent)
                    let anonymous = try await request(client, port: port, "/v1/config", agent: nil)
                    #expect(anonymous.status == .badRequest)
                }
            }
        }
    }

    @Test("The collector's token guards the endpoints as it guards the stream; a status larger than 16 KiB is 413")
    func token() async throws {
        try await withGuardedCollector { collector, port, client in
            let refused = try await request(client, port: port, "/v1/config", agent: "edge-1")
            #expect(refused.status == .unauthorized)
            #expect(refused.header("WWW-Authenticate") == "Bearer")
            let wrong = try await request(
                client, port: port, "/v1/config/status", agent: "edge-1", method: .POST,
                headers: [("Authorization", "Bearer guess")], body: Array(#"{"config_status":{"state":"applied"}}"#.utf8))
            #expect(wrong.status == .unauthorized)
            #expect(collector.remoteConfigStatuses().isEmpty)
            let bearer = [("Authorization", "Bearer s3cret")]
            #expect(try await request(client, port: port, "/v1/config", agent: "edge-1", headers: bearer).status == .ok)
            var large = Array(#"{"config_status":{"state":"failed","error":""#.utf8)
            large += Array(repeating: UInt8(ascii: "x"), count: 16 * 1024) + Array(#""}}"#.utf8)
            let tooLarge = try await request(
                client, port: port, "/v1/config/status", agent: "edge-1", method: .POST, headers: bearer, body: large)
            #expect(tooLarge.status.code == 413)
            let accepted = try await request(
                client, port: port, "/v1/config/status", agent: "edge-1", method: .POST, headers: bearer,
                body: Array("{\"config_status\":{\"state\":\"applied\"}}\n".utf8))
            #expect(accepted.status == .noContent)
            #expect(collector.remoteConfigStatuses()["edge-1"]?.status == ConfigStatus(state: .applied))
        }
    }

    @Test("Blobs: whole, ranges at byte 1, half and size-1 (206), If-Range mismatch (200), 416, 404 unknown and not assigned")
    func blobs() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            let (document, envelope) = try fixture.document("base", tailDocument)
            try fixture.document("other", cpuDocument)
            try fixture.assignments("""
                generation: 1
                assign:
                  - {name: edges, match: {agents: ["edge-*"]}, documents: [base]}
                  - {name: cores, match: {agents: ["core-*"]}, documents: [other]}

                """)
            try await withRemoteCollector(remoteConfiguration(root, fixture.settings)) { _, port in
                try await withClient { client in
                    let digest = SHA256Digest(of: document)
                    let path = "/v1/config/blobs/\(digest.prefixed)"
                    let whole = try await request(client, port: port, path, agent: "edge-1")
                    #expect(whole.status == .ok)
                    #expect(whole.body == document)
                    #expect(whole.header("ETag") == "\"\(digest.prefixed)\"")
                    #expect(whole.header("Accept-Ranges") == "bytes")
                    #expect(whole.header("Cache-Control")?.contains("immutable") == true)
                    for start in [1, document.count / 2, document.count - 1] {
                        let part = try await request(
                            client, port: port, path, agent: "edge-1",
                            headers: [("Range", "bytes=\(start)-"), ("If-Range", "\"\(digest.prefixed)\"")])
                        #expect(part.status == .partialContent)
                        #expect(part.body == Array(document[start...]))
                        #expect(part.header("Content-Range") == "bytes \(start)-\(document.count - 1)/\(document.count)")
                    }
                    let middle = try await request(client, port: port, path, agent: "edge-1", headers: [("Range", "bytes=2-5")])
                    #expect(middle.status == .partialContent)
                    #expect(middle.body == Array(document[2...5]))
                    let changed = try await request(
                        client, port: port, path, agent: "edge-1",
                        headers: [("Range", "bytes=1-"), ("If-Range", "\"sha256:\(String(repeating: "0", count: 64))\"")])
                    #expect(changed.status == .ok)
                    #expect(changed.body == document)
                    let beyond = try await request(
                        client, port: port, path, agent: "edge-1", headers: [("Range", "bytes=\(document.count)-")])
                    #expect(beyond.status == .rangeNotSatisfiable)
                    #expect(beyond.header("Content-Range") == "bytes */\(document.count)")
                    let signature = try await request(
                        client, port: port, "/v1/config/blobs/\(SHA256Digest(of: envelope).prefixed)", agent: "edge-1")
                    #expect(signature.status == .ok)
                    #expect(try ConfigEnvelope(json: signature.body).name == "base")
                    let unknown = try await request(
                        client, port: port, "/v1/config/blobs/\(SHA256Digest(of: [1, 2, 3]).prefixed)", agent: "edge-1")
                    #expect(unknown.status == .notFound)
                    let malformed = try await request(client, port: port, "/v1/config/blobs/sha256:xyz", agent: "edge-1")
                    #expect(malformed.status == .notFound)
                    let foreign = try await request(client, port: port, path, agent: "core-1")
                    #expect(foreign.status == .notFound)
                }
            }
        }
    }

    @Test(
        "A document that is unsigned, tampered, signed for another name or by another key, or invalid stops the start",
        arguments: ["unsigned", "tampered", "wrong-name", "untrusted", "invalid"])
    func refusedAtStart(_ fault: String) async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("good", cpuDocument)
            switch fault {
            case "unsigned":
                try fixture.document("bad", tailDocument, signed: false)
            case "tampered":
                try fixture.document("bad", tailDocument)
                try (tailDocument.replacingOccurrences(of: "app.log", with: "app.loh"))
                    .write(toFile: fixture.directory + "/documents/bad.yaml", atomically: true, encoding: .utf8)
            case "wrong-name":
                try fixture.document("bad", tailDocument, signedName: "good")
            case "untrusted":
                try fixture.document(
                    "bad", tailDocument, key: SigningKeyFile.SigningKey(id: "ops-2026", key: Ed25519.SecretKey.generate()))
            default:
                try fixture.document("bad", "agent:\n  id: stolen\n")
            }
            try fixture.assignments("generation: 1\nassign:\n  - {name: all, documents: [good, bad]}\n")
            await #expect {
                try await withRemoteCollector(remoteConfiguration(root, fixture.settings)) { _, _ in }
            } throws: { error in
                let text = "\(error)"
                // The refused document is named with its path and reason; the good one is not named.
                return text.contains("document 'bad' (") && !text.contains("document 'good' (")
            }
        }
    }

    @Test("require_signature: false: a document without an envelope is served unsigned; an envelope it has must name it")
    func unsignedDocuments() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            let (plain, _) = try fixture.document("plain", tailDocument, signed: false)
            let (signed, envelope) = try fixture.document("signed", cpuDocument)
            try fixture.assignments("generation: 2\nassign:\n  - {name: all, documents: [plain, signed]}\n")
            var settings = fixture.settings
            settings.requireSignature = false
            settings.trustedKeys = []
            try await withRemoteCollector(remoteConfiguration(root, settings)) { collector, port in
                try await withClient { client in
                    let answer = try await request(client, port: port, "/v1/config", agent: "edge-1")
                    #expect(answer.status == .ok)
                    let text = String(decoding: answer.body, as: UTF8.self)
                    // The unsigned document's entry has no sig_ keys; the signed one keeps its envelope.
                    #expect(text.contains(#"{"name":"plain","sha256":"\#(SHA256Digest(of: plain).hex)","size":\#(plain.count)}"#), "\(text)")
                    let manifest = try ConfigManifest(json: answer.body)
                    #expect(manifest.documents == [
                        ConfigManifest.Document(name: "plain", sha256: SHA256Digest(of: plain), size: plain.count, envelope: nil),
                        ConfigManifest.Document(
                            name: "signed", sha256: SHA256Digest(of: signed), size: signed.count,
                            signatureSHA256: SHA256Digest(of: envelope), signatureSize: envelope.count),
                    ])
                    let blob = try await request(
                        client, port: port, "/v1/config/blobs/\(SHA256Digest(of: plain).prefixed)", agent: "edge-1")
                    #expect(blob.status == .ok)
                    #expect(blob.body == plain)

                    // An envelope is still checked where there is one: signed for another name, the load fails.
                    try fixture.document("plain", tailDocument, signedName: "signed")
                    try fixture.assignments("generation: 3\nassign:\n  - {name: all, documents: [plain, signed]}\n")
                    guard case .failure(let failure)? = collector.reloadRemoteConfig() else {
                        Issue.record("an envelope naming another document was loaded")
                        return
                    }
                    #expect(failure.description.contains("document 'plain'"))
                    #expect(failure.description.contains("the envelope signs document 'signed', not 'plain'"))
                }
            }

            // With require_signature (the default) the same unsigned document stops the start, saying what to do.
            try fixture.document("plain", tailDocument, signed: false)
            await #expect {
                try await withRemoteCollector(remoteConfiguration(root, fixture.settings)) { _, _ in }
            } throws: { error in
                "\(error)".contains("it has no envelope (plain.yaml.sig): sign it with `uplink config sign`, or set "
                    + "collector.remote_config.require_signature: false to serve it unsigned")
            }
        }
    }

    @Test("An agent that never streams and reports by POST /v1/config/status is in /v1/fleet: not connected, last seen, its status")
    func postOnlyAgentInTheFleet() async throws {
        try await withGuardedCollector { collector, port, client in
            let bearer = [("Authorization", "Bearer s3cret")]
            // Refused requests name no one: nothing enters the table.
            let refused = try await request(
                client, port: port, "/v1/config/status", agent: "intruder", method: .POST,
                headers: [("Authorization", "Bearer guess")], body: Array(#"{"config_status":{"state":"applied"}}"#.utf8))
            #expect(refused.status == .unauthorized)
            #expect(try await request(client, port: port, "/v1/config", agent: nil, headers: bearer).status == .badRequest)
            #expect(collector.agents().isEmpty)

            let before = WallClock.nowNanoseconds()
            let status = #"{"config_status":{"desired":"sha256:\#(String(repeating: "a", count: 64))","effective":null,"lkg":null,"state":"failed","error":"no envelope","generation":1}}"#
            let posted = try await request(
                client, port: port, "/v1/config/status", agent: "edge-9", method: .POST, headers: bearer,
                body: Array(status.utf8))
            #expect(posted.status == .noContent)
            let after = WallClock.nowNanoseconds()

            let agent = try #require(collector.agents().first { $0.agent == "edge-9" })
            #expect(!agent.connected && agent.connectedSince == nil && agent.streamsOpened == 0)
            #expect(agent.lastSeen >= before && agent.lastSeen <= after)
            #expect(agent.recordsStored == 0 && agent.peer == nil && agent.httpVersion == nil)

            let fleet = try await request(client, port: port, "/v1/fleet", agent: nil, headers: bearer)
            #expect(fleet.status == .ok)
            let object = try JSONSerialization.jsonObject(with: Data(fleet.body)) as? [String: Any]
            let agents = try #require(object?["agents"] as? [[String: Any]])
            #expect(agents.map { $0["agent"] as? String } == ["edge-9"])
            let row = agents[0]
            #expect(row["connected"] as? Bool == false)
            #expect(row["connected_since_ms"] is NSNull)
            #expect(row["streams_opened"] as? Int == 0)
            #expect((row["last_seen_ms"] as? NSNumber)?.int64Value == agent.lastSeen / 1_000_000)
            let config = try #require(row["config"] as? [String: Any])
            #expect(config["state"] as? String == "failed")
            #expect(config["error"] as? String == "no envelope")
            #expect(config["generation"] as? Int == 1)

            // Its polls keep it seen: a later manifest request moves last_seen on.
            let polled = WallClock.nowNanoseconds()
            #expect(try await request(client, port: port, "/v1/config", agent: "edge-9", headers: bearer).status == .ok)
            let seenAgain = try #require(collector.agents().first { $0.agent == "edge-9" })
            #expect(seenAgain.lastSeen >= polled && !seenAgain.connected)

            // The fleet page says so for an agent without a stream.
            let page = try await request(client, port: port, "/", agent: nil, headers: bearer)
            #expect(String(decoding: page.body, as: UTF8.self).contains(#"agent.streams_opened === 0 ? "no stream; " : """#))
        }
    }

    @Test("A reload that finds a refused document, or a lower generation, keeps serving the previous set")
    func reloadKeepsTheLastGoodSet() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("base", tailDocument)
            try fixture.assignments("generation: 5\nassign:\n  - {name: all, documents: [base]}\n")
            let log = LogCapture(level: .info)
            try await withRemoteCollector(remoteConfiguration(root, fixture.settings), logger: log.logger) { collector, port in
                try await withClient { client in
                    let before = try await request(client, port: port, "/v1/config", agent: "edge-1")
                    #expect(before.status == .ok)

                    try fixture.document("extra", cpuDocument)
                    try cpuDocument.appending("# changed\n")
                        .write(toFile: fixture.directory + "/documents/extra.yaml", atomically: true, encoding: .utf8)
                    try fixture.assignments("generation: 6\nassign:\n  - {name: all, documents: [base, extra]}\n")
                    guard case .failure(let failure)? = collector.reloadRemoteConfig() else {
                        Issue.record("a tampered document was loaded")
                        return
                    }
                    #expect(failure.description.contains("document 'extra'"))
                    #expect(!log.entries(containing: "Remote configuration not reloaded").isEmpty)
                    let kept = try await request(client, port: port, "/v1/config", agent: "edge-1")
                    #expect(kept.body == before.body)

                    try fixture.remove("extra")
                    try fixture.assignments("generation: 4\nassign:\n  - {name: all, documents: [base]}\n")
                    guard case .failure(let lower)? = collector.reloadRemoteConfig() else {
                        Issue.record("a lower generation was loaded")
                        return
                    }
                    #expect(lower.description.contains("generation 4 is lower than 5"))
                    #expect(try await request(client, port: port, "/v1/config", agent: "edge-1").body == before.body)

                    try fixture.assignments("generation: 6\nassign: []\n")
                    #expect(try collector.reloadRemoteConfig()?.get() == 6)
                    #expect(try await request(client, port: port, "/v1/config", agent: "edge-1").status == .noContent)
                }
            }
        }
    }

    @Test("agent_identity certificate: asking for another agent's configuration is 403 and counted")
    func identity() async throws {
        try await withTemporaryDirectory { root in
            let pki = try await TestPKI(directory: root + "/pki")
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("base", tailDocument)
            try fixture.assignments("generation: 1\nassign:\n  - {name: all, match: {agents: [\"agent-*\"]}, documents: [base]}\n")
            let tls = pki.collectorTLS(clientAuthentication: .required, agentIdentity: .certificate)
            try await withRemoteCollector(remoteConfiguration(root, fixture.settings, tls: tls)) { collector, port in
                try await withTLSClient(try pki.clientTLS(presenting: pki.agent)) { client in
                    let own = try await request(client, port: port, "/v1/config", agent: "agent-1", scheme: "https")
                    #expect(own.status == .ok)
                    let other = try await request(client, port: port, "/v1/config", agent: "agent-2", scheme: "https")
                    #expect(other.status == .forbidden)
                    #expect(String(decoding: other.body, as: UTF8.self).contains("Uplink-Agent 'agent-2'"))
                    let manifest = try ConfigManifest(json: own.body)
                    let blob = try await request(
                        client, port: port, "/v1/config/blobs/\(manifest.documents[0].sha256.prefixed)", agent: "agent-2",
                        scheme: "https")
                    #expect(blob.status == .forbidden)
                }
                #expect(collector.edgeStatistics().identityRefused == 2)
            }
        }
    }

    @Test("Labels: the inventory's count; an agent's own Uplink-Labels only with labels_from: agent")
    func labels() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("berlin", tailDocument)
            try fixture.assignments("generation: 1\nassign:\n  - {name: berlin, match: {labels: {site: \"berlin-*\"}}, documents: [berlin]}\n")
            try fixture.inventory("edge-1: {site: berlin-3}\nedge-2: {site: paris-1}\n")
            for trustAgents in [false, true] {
                var settings = fixture.settings
                if trustAgents { settings.labelsFrom.insert(.agent) }
                try await withRemoteCollector(remoteConfiguration(root, settings)) { _, port in
                    try await withClient { client in
                        let listed = try await request(client, port: port, "/v1/config", agent: "edge-1")
                        #expect(listed.status == .ok)
                        let claimed = try await request(
                            client, port: port, "/v1/config", agent: "edge-3", headers: [("Uplink-Labels", "site=berlin-9, role=x")])
                        #expect(claimed.status == (trustAgents ? .ok : .noContent))
                        // The inventory wins over what an agent says of itself.
                        let overridden = try await request(
                            client, port: port, "/v1/config", agent: "edge-2", headers: [("Uplink-Labels", "site=berlin-1")])
                        #expect(overridden.status == .noContent)
                    }
                }
            }
        }
    }

    @Test("Labels from the client certificate: SAN URIs uplink:label:NAME=VALUE")
    func certificateLabels() async throws {
        try await withTemporaryDirectory { root in
            let pki = try await TestPKI(directory: root + "/pki")
            let labelled = try await pki.authority.issue(
                commonName: "agent-7", uris: ["uplink:label:site=berlin-2", "https://example.com/other"], usage: .client)
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("berlin", tailDocument)
            try fixture.assignments("generation: 1\nassign:\n  - {name: berlin, match: {labels: {site: \"berlin-*\"}}, documents: [berlin]}\n")
            let tls = pki.collectorTLS(clientAuthentication: .required, agentIdentity: .certificate)
            try await withRemoteCollector(remoteConfiguration(root, fixture.settings, tls: tls)) { _, port in
                try await withTLSClient(try pki.clientTLS(presenting: labelled)) { client in
                    let answer = try await request(client, port: port, "/v1/config", agent: "agent-7", scheme: "https")
                    #expect(answer.status == .ok)
                    #expect(try ConfigManifest(json: answer.body).documents.map(\.name) == ["berlin"])
                }
                try await withTLSClient(try pki.clientTLS(presenting: pki.agent)) { client in
                    let answer = try await request(
                        client, port: port, "/v1/config", agent: "agent-1", headers: [("Uplink-Labels", "site=berlin-2")],
                        scheme: "https")
                    #expect(answer.status == .noContent)
                }
            }
        }
    }

    @Test("Percent buckets: stable, and roughly proportional over 1,000 agent ids")
    func percentBuckets() throws {
        let ids = (0..<1000).map { "edge-\($0)" }
        let buckets = ids.map { RemoteConfigSet.bucket(rollout: "modbus", agent: $0) }
        #expect(buckets == ids.map { RemoteConfigSet.bucket(rollout: "modbus", agent: $0) })
        #expect(buckets.allSatisfy { (0..<10_000).contains($0) })
        // Known value: the first 8 bytes of sha256("modbus\nedge-0"), big-endian, mod 10 000.
        let digest = SHA256Digest(of: Array("modbus\nedge-0".utf8))
        let expected = digest.bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 10_000
        #expect(buckets[0] == Int(expected))
        for percent in [10, 50] {
            let inside = buckets.filter { $0 < percent * 100 }.count
            #expect(abs(inside - percent * 10) <= 50, "\(inside) of 1000 in a \(percent) % stage")
        }
        // Independent across rollouts.
        let other = ids.map { RemoteConfigSet.bucket(rollout: "base", agent: $0) }
        #expect(Set(zip(buckets, other).filter { $0.0 < 1000 }.map(\.1)).count > 50)
    }

    @Test("A staged rollout: the canary stage gets the new document first; a reported failure there halts it")
    func canaryThenHalt() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("modbus-v1", cpuDocument)
            try fixture.document("modbus-v2", tailDocument)
            try fixture.inventory("edge-1: {ring: canary}\nedge-2: {ring: canary}\nedge-3: {ring: main}\n")
            try fixture.assignments("""
                generation: 2
                assign:
                  - name: modbus
                    match: {agents: ["edge-*"]}
                    documents: [modbus-v2]
                    rollout:
                      previous: [modbus-v1]
                      stages:
                        - {match: {labels: {ring: canary}}}
                        - {percent: 0}
                      current_stage: 0
                      halt_on_failures: 1

                """)
            let log = LogCapture(level: .info)
            try await withRemoteCollector(remoteConfiguration(root, fixture.settings), logger: log.logger) { collector, port in
                try await withClient { client in
                    func documents(_ agent: String) async throws -> [String] {
                        let answer = try await request(client, port: port, "/v1/config", agent: agent)
                        return try ConfigManifest(json: answer.body).documents.map(\.name)
                    }
                    #expect(try await documents("edge-1") == ["modbus-v2"])
                    #expect(try await documents("edge-2") == ["modbus-v2"])
                    #expect(try await documents("edge-3") == ["modbus-v1"])
                    let v2 = try ConfigManifest(json: try await request(client, port: port, "/v1/config", agent: "edge-1").body)
                    // edge-1 applied the new document; edge-2 rolls it back.
                    var applied: [UInt8] = []
                    WireLineWriter.appendConfigStatusLine(
                        ConfigStatus(desired: v2.revision.prefixed, effective: v2.revision.prefixed, state: .applied, generation: 2),
                        to: &applied)
                    #expect(try await request(client, port: port, "/v1/config/status", agent: "edge-1", method: .POST, body: applied)
                        .status == .noContent)
                    #expect(collector.remoteConfigRollouts() == [RolloutStatus(name: "modbus", stage: 0, halted: false, reason: nil)])
                    var failed: [UInt8] = []
                    WireLineWriter.appendConfigStatusLine(
                        ConfigStatus(desired: v2.revision.prefixed, state: .rolledBack, error: "tail app: permission denied", generation: 2),
                        to: &failed)
                    #expect(try await request(client, port: port, "/v1/config/status", agent: "edge-2", method: .POST, body: failed)
                        .status == .noContent)
                    let rollouts = collector.remoteConfigRollouts()
                    #expect(rollouts.count == 1)
                    #expect(rollouts.first?.halted == true)
                    #expect(rollouts.first?.reason?.contains("edge-2: tail app: permission denied") == true)
                    #expect(!log.entries(containing: "Rollout halted").isEmpty)
                    // The agent already on the new document keeps it; the failing one goes back to the previous one.
                    #expect(try await documents("edge-1") == ["modbus-v2"])
                    #expect(try await documents("edge-2") == ["modbus-v1"])
                    #expect(try await documents("edge-3") == ["modbus-v1"])
                    #expect(collector.remoteConfigStatuses()["edge-2"]?.status.state == .rolledBack)

                    let fleet = try await request(client, port: port, "/v1/fleet", agent: nil)
                    let object = try #require(try JSONSerialization.jsonObject(with: Data(fleet.body)) as? [String: Any])
                    let listed = try #require(object["rollouts"] as? [[String: Any]])
                    #expect(listed.first?["name"] as? String == "modbus")
                    #expect(listed.first?["halted"] as? Bool == true)

                    let malformed = try await request(
                        client, port: port, "/v1/config/status", agent: "edge-1", method: .POST,
                        body: Array(#"{"config_status":{"state":"done"}}"#.utf8))
                    #expect(malformed.status == .badRequest)
                }
            }
        }
    }

    @Test("On a stream: Uplink-Config header and config line after resume, again after a reload changes the assignment; a config_status line is recorded, not rejected")
    func streamHint() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("base", tailDocument)
            try fixture.document("sensors", cpuDocument)
            try fixture.assignments("generation: 1\nassign:\n  - {name: all, documents: [base]}\n")
            try await withRemoteCollector(remoteConfiguration(root, fixture.settings)) { collector, port in
                try await withClient { client in
                    let first = try ConfigManifest(json: try await request(client, port: port, "/v1/config", agent: "edge-1").body)
                    let connection = try await AgentConnection.open(client, port: port, agent: "edge-1", epoch: 9)
                    #expect(connection.response.status == .ok)
                    let header = try #require(connection.response.headers.first(name: "Uplink-Config"))
                    #expect(ConfigHint(headerValue: header) == ConfigHint(revision: first.revision.prefixed, generation: 1))
                    let resume = try #require(try await connection.nextLine())
                    #expect(AckLine.parse(resume) == .resume(0))
                    let hint = try #require(try await connection.nextLine())
                    #expect(ConfigHint.parse(hint) == ConfigHint(revision: first.revision.prefixed, generation: 1))

                    // A status line and a record: the record is acknowledged, the status recorded, nothing rejected.
                    var status: [UInt8] = []
                    WireLineWriter.appendConfigStatusLine(
                        ConfigStatus(desired: first.revision.prefixed, effective: first.revision.prefixed, state: .applied, generation: 1),
                        to: &status)
                    connection.send(ByteBuffer(bytes: status))
                    connection.send(body(1...1))
                    try await connection.waitForAck(1)
                    #expect(collector.remoteConfigStatuses()["edge-1"]?.status.state == .applied)
                    #expect(collector.statistics().malformedLines == 0)
                    #expect(collector.agents().first?.rejectedLines == 0)

                    // A reload that leaves the revision alone sends nothing; one that changes it sends a line.
                    try fixture.assignments("generation: 2\nassign:\n  - {name: all, documents: [base]}\n")
                    #expect(try collector.reloadRemoteConfig()?.get() == 2)
                    try fixture.assignments("generation: 3\nassign:\n  - {name: all, documents: [base, sensors]}\n")
                    #expect(try collector.reloadRemoteConfig()?.get() == 3)
                    let second = try ConfigManifest(json: try await request(client, port: port, "/v1/config", agent: "edge-1").body)
                    var next = try #require(try await connection.nextLine())
                    while next.readableBytesView.starts(with: #"{"heartbeat":"#.utf8) { next = try #require(try await connection.nextLine()) }
                    #expect(ConfigHint.parse(next) == ConfigHint(revision: second.revision.prefixed, generation: 3))
                    #expect(second.revision != first.revision)
                    _ = try await connection.close()
                }
            }
        }
    }
}
