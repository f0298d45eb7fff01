import Foundation
import Testing
import UplinkCore
import UplinkRemoteConfig
import UplinkTestSupport

/// `uplink validate --config LOCAL --remote DOC…`, run as the built binary.
@Suite("uplink validate --remote", .serialized, .timeLimit(.minutes(2)))
struct ValidateRemoteCommandTests {
    /// A directory with `local.yaml` (remote_config enabled, a key file) and the documents `documents` names.
    private func setUp(_ documents: [String: String]) async throws -> String {
        let directory = try Harness.temporaryDirectory("validate-remote")
        #expect(try await UplinkBinary.run(["config", "keygen", "--out", directory + "/fleet"]).status == 0)
        try """
            uplink: { url: http://127.0.0.1:4318 }
            sources:
              - { name: cpu, type: cpu }
            remote_config:
              enabled: true
              trusted_keys: [\(directory)/fleet.pub]
              allow:
                source_types: [cpu, memory, tail]
                tail_paths: ["/var/log/app/**"]
                exec:
                  - argv: [/bin/sh, -c, "*"]
            """.write(toFile: directory + "/local.yaml", atomically: true, encoding: .utf8)
        for (name, text) in documents {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }
        return directory
    }

    @Test("valid documents: exit 0, the merged sources in the summary, a warning about a shell in allow.exec")
    func valid() async throws {
        let directory = try await setUp([
            "app.yaml": "sources:\n  - { name: app-cpu, type: cpu, interval: 5s }\n",
            "logs.yml": "sources:\n  - { name: app-log, type: tail, paths: [\"/var/log/app/*.log\"] }\n",
        ])
        let result = try await UplinkBinary.run([
            "validate", "--config", directory + "/local.yaml", "--remote", directory + "/app.yaml", "--remote", directory + "/logs.yml",
        ])
        #expect(result.status == 0, "stderr: \(result.standardError)")
        #expect(result.standardOutput.contains("with 3 sources [cpu (cpu), app-cpu (cpu), app-log (tail)]"), "\(result.standardOutput)")
        #expect(result.standardOutput.contains("2 remote documents adding 2 sources"))
        #expect(result.standardError.contains("warning: remote_config.allow.exec allows '/bin/sh -c *'"))
    }

    @Test("refused documents: exit 78, every issue as remote:<name>@<sha256 prefix>:LINE:COL: key: message")
    func refused() async throws {
        let bad = """
            sources:
              - { name: cpu, type: cpu }
              - { name: secrets, type: tail, paths: [/etc/shadow] }
              - { name: home, type: memory, tags: { home: "${HOME}" } }
            uplink:
              url: http://evil.test
            """
        let directory = try await setUp(["bad.yaml": bad, "good.yaml": "sources:\n  - { name: app-cpu, type: cpu }\n"])
        let result = try await UplinkBinary.run([
            "validate", "--config", directory + "/local.yaml", "--remote", directory + "/good.yaml", "--remote", directory + "/bad.yaml",
        ])
        #expect(result.status == 78)
        let file = "remote:bad@" + SHA256Digest(of: Array(bad.utf8)).hex.prefix(12)
        let lines = result.standardError.split(separator: "\n").map(String.init).filter { !$0.contains("warning:") }
        #expect(lines == [
            "\(file):2:13: sources[0].name: the name 'cpu' is used by a local source (hint: a remote document cannot replace or change a local source; rename it)",
            "\(file):3:42: sources[1].paths[0]: '/etc/shadow' is not inside remote_config.allow.tail_paths (hint: allowed: /var/log/app/**)",
            "\(file):4:47: sources[2].tags.home: '${' is not allowed here: this document gets no environment variable expansion (hint: write the value itself; only the local configuration file expands ${VAR})",
            "\(file):5:1: uplink: 'uplink' is not allowed in a remote document, which may hold only 'sources' (hint: agent, buffer, uplink, collector and remote_config are set by the local file alone)",
            "4 configuration issues in the remote documents; nothing was started",
        ])
        #expect(!result.standardError.contains("Fatal error"))
    }

    @Test("a local file without remote_config enabled refuses documents; a missing document is reported")
    func notEnabledAndMissing() async throws {
        let directory = try Harness.temporaryDirectory("validate-remote-off")
        try "uplink: { url: http://127.0.0.1:4318 }\nsources: [{ name: cpu, type: cpu }]\n"
            .write(toFile: directory + "/local.yaml", atomically: true, encoding: .utf8)
        let result = try await UplinkBinary.run([
            "validate", "--config", directory + "/local.yaml", "--remote", directory + "/missing.yaml",
        ])
        #expect(result.status == 78)
        #expect(result.standardError.contains("\(directory)/missing.yaml: cannot read the remote document: No such file or directory"))
        #expect(result.standardError.contains("\(directory)/local.yaml: remote_config.enabled: remote_config is not enabled, so remote documents are not applied"))
    }
}
