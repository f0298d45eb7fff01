import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport

/// `uplink collector --config` with `collector.remote_config`: the executable's validator and its SIGHUP.
@Suite("uplink collector: remote configuration", .timeLimit(.minutes(3)))
struct RemoteConfigCommandTests {
    /// SHA-256 in hex, from coreutils (this target does not link the signing module).
    static func sha256(_ path: String) async throws -> String {
        String(try await SpawnedProcess.run(["/usr/bin/sha256sum", path]).outputText.prefix(64))
    }

    /// Writes `documents/<name>.yaml` with an envelope that names it (unsigned: `require_signature: false`).
    static func document(_ directory: String, _ name: String, _ text: String) async throws {
        let path = directory + "/documents/\(name).yaml"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let digest = try await sha256(path)
        let envelope = #"{"alg":"ed25519","audience":{"agent":"*","labels":{}},"key_id":"k1","name":"\#(name)","#
            + #""not_after":"2030-01-01T00:00:00Z","serial":1,"sha256":"\#(digest)","#
            + #""sig":"\#(Data(count: 64).base64EncodedString())","size":\#(text.utf8.count)}"# + "\n"
        try envelope.write(toFile: path + ".sig", atomically: true, encoding: .utf8)
    }

    @Test("SIGHUP reloads the directory; a refused reload keeps the documents served; a document the validator refuses stops the start")
    func sighupReloads() async throws {
        let root = try Harness.temporaryDirectory("remote-config-command")
        let fleet = root + "/fleet"
        try FileManager.default.createDirectory(atPath: fleet + "/documents", withIntermediateDirectories: true)
        try await Self.document(fleet, "base", "sources:\n  - name: cpu\n    type: cpu\n")
        try "generation: 1\nassign: []\n".write(toFile: fleet + "/assignments.yaml", atomically: true, encoding: .utf8)
        let port = try FreePort.pick()
        let config = root + "/collector.yaml"
        try """
            collector:
              listen: 127.0.0.1:\(port)
              data_dir: \(root)/data
              stdout: false
              remote_config:
                dir: \(fleet)
                require_signature: false
            """.write(toFile: config, atomically: true, encoding: .utf8)

        let (process, log) = try UplinkBinary.start(["collector", "--config", config], capturing: .both)
        // Cannot await here: the collector is told to stop, and killed and reaped if it still runs when released.
        defer { if process.isRunning { process.terminate() } }
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        func status() async -> Int? {
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/config")
            request.headers.add(name: "Uplink-Agent", value: "edge-1")
            guard let response = try? await client.execute(request, timeout: peerRequestTimeout) else { return nil }
            _ = try? await response.body.collect(upTo: 1 << 20)
            return Int(response.status.code)
        }
        do {
            #expect(await eventually(timeout: .seconds(30)) { await status() == 204 }, "log: \(log.text)")
            try "generation: 2\nassign:\n  - {name: all, documents: [base]}\n"
                .write(toFile: fleet + "/assignments.yaml", atomically: true, encoding: .utf8)
            kill(process.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(30)) { await status() == 200 }, "log: \(log.text)")

            // A document the executable's validator refuses: the reload is refused, the documents stay served.
            try await Self.document(fleet, "rogue", "agent:\n  id: stolen\n")
            try "generation: 3\nassign:\n  - {name: all, documents: [base, rogue]}\n"
                .write(toFile: fleet + "/assignments.yaml", atomically: true, encoding: .utf8)
            kill(process.processIdentifier, SIGHUP)
            #expect(
                await eventually(timeout: .seconds(30)) { log.text.contains("Remote configuration not reloaded") },
                "log: \(log.text)")
            #expect(log.text.contains("'agent' is not allowed in a remote document"), "log: \(log.text)")
            #expect(await status() == 200)
            #expect(process.isRunning)
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
        process.terminate()
        await process.awaitExit()

        // At start the same directory is a configuration error: the process exits and names the document.
        let refused = try await UplinkBinary.run(["collector", "--config", config])
        #expect(refused.status != 0)
        #expect(refused.standardError.contains("document 'rogue'"), "\(refused.standardError)")
    }
}
