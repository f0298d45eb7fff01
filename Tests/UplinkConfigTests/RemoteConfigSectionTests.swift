import Foundation
import Testing
import UplinkAgent
import UplinkConfig
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig
import UplinkSources
import UplinkTestSupport

@Suite("remote_config section")
struct RemoteConfigSectionTests {
    static let markers = (
        begin: "<!-- BEGIN remote_config keys: generated from UplinkFile.RemoteConfigSection.documentedKeys -->",
        end: "<!-- END remote_config keys -->"
    )

    @Test("absent: off, with every default")
    func defaults() throws {
        let file = try decode(minimalAgent).get()
        let remote = file.remoteConfig
        #expect(remote == UplinkFile.RemoteConfigSection())
        #expect(!remote.enabled)
        #expect(remote.pollInterval == .seconds(300))
        #expect(remote.probation == .seconds(60))
        #expect(remote.maxDocumentBytes == 1 << 20)
        #expect(remote.trustedKeys == [])
        #expect(remote.requireSignature)
        #expect(remote.labels == [:])
        #expect(remote.allow.sourceTypes == [])
        #expect(remote.allow.exec == [])
        #expect(remote.allow.maxSources == 32)
        #expect(remote.allow.minInterval == .seconds(1))
        // `remote_config:` alone: the defaults too.
        #expect(try decode(minimalAgent + "\nremote_config:\n").get().remoteConfig == UplinkFile.RemoteConfigSection())
    }

    @Test("every key decodes")
    func everyKey() throws {
        let directory = try TestDirectories.make("uplink-remote-section")
        try writePublicKey(to: directory + "/a.pub", id: "a")
        try writePublicKey(to: directory + "/b.pub", id: "b")
        let yaml = minimalAgent + """

            remote_config:
              enabled: true
              poll_interval: 10m
              probation: 2m
              max_document_bytes: 256KiB
              trusted_keys: [\(directory)/a.pub, \(directory)/b.pub]
              require_signature: true
              labels: { site: berlin-3, ring: canary }
              allow:
                source_types: [cpu, tail, exec]
                tail_paths: ["/var/log/app/**"]
                sysfs_paths: ["/sys/bus/iio/devices/**"]
                journald_units: ["app-*.service"]
                exec:
                  - argv: [/usr/local/lib/uplink/probes/modbus-read, --unit, "*"]
                max_sources: 8
                min_interval: 5s
            """
        let result = decode(yaml)
        #expect(result.issues.map(\.description) == [])
        let remote = try result.get().remoteConfig
        #expect(remote.signingKeys.map(\.id) == ["a", "b"])
        var withoutKeys = remote
        withoutKeys.signingKeys = []
        #expect(withoutKeys == UplinkFile.RemoteConfigSection(
            enabled: true, pollInterval: .seconds(600), probation: .seconds(120), maxDocumentBytes: 256 * 1024,
            trustedKeys: [directory + "/a.pub", directory + "/b.pub"], requireSignature: true,
            labels: ["site": "berlin-3", "ring": "canary"],
            allow: .init(
                sourceTypes: [CPUConfig.kind, TailConfig.kind, ExecConfig.kind], tailPaths: ["/var/log/app/**"],
                sysfsPaths: ["/sys/bus/iio/devices/**"], journaldUnits: ["app-*.service"],
                exec: [["/usr/local/lib/uplink/probes/modbus-read", "--unit", "*"]], maxSources: 8, minInterval: .seconds(5))))
    }

    @Test("bad values are reported at their line and column")
    func badValues() {
        let yaml = minimalAgent + """

            remote_config:
              enabled: yes
              poll_interval: 10s
              probation: 0s
              max_document_bytes: 32MiB
              trusted_keys: [keys/ops.pub, /nonexistent/uplink-test/ops.pub]
              labels: { "bad label": x, site: "two words" }
              allow:
                source_types: [generator, cpuu]
                tail_paths: [var/log/*.log]
                journald_units: ["a/b"]
                exec:
                  - argv: [sh, -c, "*"]
                  - { argv: [] }
                max_sources: -1
                min_interval: 0s
                max_tail_files: 3
            """
        #expect(issues(yaml) == [
            "test.yaml:7:12: remote_config.enabled: expected true or false, got 'yes' (hint: write true or false; YAML 1.1 spellings such as yes, no, on and off are not accepted)",
            "test.yaml:8:18: remote_config.poll_interval: '10s' is too small: the minimum is 30s",
            "test.yaml:9:14: remote_config.probation: '0s' is too small: it must be greater than 0s",
            "test.yaml:10:23: remote_config.max_document_bytes: '32MiB' is out of range: it must be between 1KiB and 16MiB",
            "test.yaml:11:18: remote_config.trusted_keys[0]: 'keys/ops.pub' is not an absolute path (hint: give the key file's full path, e.g. /etc/uplink/fleet-keys/ops.pub)",
            "test.yaml:11:32: remote_config.trusted_keys[1]: cannot read the public key: errno 2 (No such file or directory) (hint: a public key file from `uplink config keygen` (PREFIX.pub))",
            "test.yaml:12:13: remote_config.labels.bad label: invalid label name 'bad label' (letters, digits, '.', '_' and '-')",
            "test.yaml:12:35: remote_config.labels.site: invalid label value 'two words': at most 255 bytes, without whitespace, control characters, ',' or '='",
            "test.yaml:14:20: remote_config.allow.source_types[0]: the generator kind cannot be allowed remotely (it exists for load tests)",
            "test.yaml:14:31: remote_config.allow.source_types[1]: unknown source type 'cpuu' (hint: did you mean 'cpu'? known types: cpu, memory, load, uptime, network, diskio, disk, thermal, hwmon, power, sysfs, exec, tail, journald)",
            "test.yaml:15:18: remote_config.allow.tail_paths[0]: 'var/log/*.log' is a relative path; only absolute paths are allowed (hint: an absolute glob pattern such as /var/log/app/**)",
            "test.yaml:16:22: remote_config.allow.journald_units[0]: invalid unit pattern 'a/b' (hint: a unit name, '*' and '?' allowed, e.g. 'app-*.service')",
            "test.yaml:18:16: remote_config.allow.exec[0].argv[0]: argv[0] 'sh' must be an absolute path, written out exactly (hint: remote commands are not looked up in PATH; e.g. /usr/local/lib/uplink/probes/read)",
            "test.yaml:19:17: remote_config.allow.exec[1].argv: argv must not be empty",
            "test.yaml:20:18: remote_config.allow.max_sources: '-1' is out of range: it must be between 0 and 1024",
            "test.yaml:21:19: remote_config.allow.min_interval: '0s' is too small: it must be greater than 0s",
            "test.yaml:22:5: remote_config.allow.max_tail_files: unknown key 'max_tail_files' (hint: allowed keys: source_types, tail_paths, sysfs_paths, journald_units, exec, max_sources, min_interval)",
        ])
    }

    @Test("labels: 64 are accepted; 65 are refused at the mapping, naming the key and the limit")
    func labelCount() {
        func labels(_ count: Int) -> String {
            minimalAgent + "\nremote_config:\n  labels: {" + (0..<count).map { "l\($0): v\($0)" }.joined(separator: ", ") + "}\n"
        }
        #expect(issues(labels(64)) == [])
        #expect(issues(labels(65)) == [
            "test.yaml:7:11: remote_config.labels: 65 labels, more than 64 (a collector refuses more in Uplink-Labels) (hint: keep the labels that assignment rules and audiences match)"
        ])
    }

    @Test("enabled with require_signature needs trusted_keys")
    func enabledNeedsKeys() {
        #expect(issues(minimalAgent + "\nremote_config:\n  enabled: true\n") == [
            "test.yaml:7:3: remote_config.trusted_keys: remote_config is enabled and requires signatures, but trusted_keys lists no key file (hint: add the public key files documents are signed with, or set require_signature: false to accept unsigned documents)"
        ])
        #expect(issues(minimalAgent + "\nremote_config:\n  enabled: true\n  require_signature: true\n  trusted_keys: []\n") == [
            "test.yaml:9:17: remote_config.trusted_keys: remote_config is enabled and requires signatures, but trusted_keys lists no key file (hint: add the public key files documents are signed with, or set require_signature: false to accept unsigned documents)"
        ])
        #expect(issues(minimalAgent + "\nremote_config:\n  enabled: true\n  require_signature: false\n") == [])
        // Off: nothing is required.
        #expect(issues(minimalAgent + "\nremote_config:\n  enabled: false\n") == [])
    }

    @Test("docs/configuration.md holds the key table as generated from documentedKeys")
    func documentation() {
        let problem = GeneratedDocumentation.checkGeneratedPart(
            ofFileAt: repositoryRoot + "/docs/configuration.md", markers: Self.markers,
            expected: GeneratedDocumentation.table(UplinkFile.RemoteConfigSection.documentedKeys),
            rewrite: SourceKindDocumentationTests.rewrite,
            command: "UPLINK_WRITE_GENERATED_DOCS=1 swift test --filter RemoteConfigSectionTests")
        if let problem { Issue.record(Comment(rawValue: problem)) }
    }

    @Test("every documented key is decoded: a value of the wrong shape is reported at it")
    func documentedKeysAreDecoded() throws {
        for key in UplinkFile.RemoteConfigSection.documentedKeys {
            let parts = key.name.split(separator: ".").map(String.init)
            var value = "[[{}]]"
            for part in parts.dropFirst().reversed() { value = "{ \(part): \(value) }" }
            let yaml = minimalAgent + "\nremote_config: { \(parts[0]): \(value) }\n"
            let path = "remote_config." + key.name
            let reported = decode(yaml).issues.contains { $0.keyPath == path || $0.keyPath.hasPrefix(path + "[") }
            #expect(reported, "remote_config does not read \(key.name)")
        }
    }

    @Test("examples.yaml documents every key of the section")
    func examples() throws {
        let text = String(decoding: try ConfigFiles.read(path: repositoryRoot + "/examples.yaml", limit: 1 << 20).get(), as: UTF8.self)
        #expect(text.contains("# remote_config:"))
        for key in UplinkFile.RemoteConfigSection.documentedKeys {
            let leaf = key.name.split(separator: ".").last.map(String.init) ?? key.name
            #expect(text.contains(leaf + ":"), "examples.yaml does not mention \(key.name)")
        }
        // The commented block, uncommented, decodes (with a key file that exists).
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.firstIndex(of: "# remote_config:"))
        var block: [String] = []
        for line in lines[start...] {
            guard line.hasPrefix("#") else { break }
            block.append(String(line.dropFirst(2)))
        }
        let directory = try TestDirectories.make("uplink-remote-example")
        try writePublicKey(to: directory + "/ops.pub", id: "ops-2026")
        let yaml = minimalAgent + "\n" + block.joined(separator: "\n")
            .replacingOccurrences(of: "/etc/uplink/fleet-keys/ops-2026.pub", with: directory + "/ops.pub") + "\n"
        #expect(issues(yaml) == [])
    }
}

@Suite("remote_config.trusted_keys: key files")
struct RemoteConfigTrustedKeyTests {
    @Test("a file that is not a public key, and two files with one key id, are refused where they are listed")
    func refused() throws {
        let directory = try TestDirectories.make("uplink-trusted-keys")
        try writePublicKey(to: directory + "/a.pub", id: "ops")
        try writePublicKey(to: directory + "/b.pub", id: "ops")
        let secret = try writePublicKey(to: directory + "/c.pub", id: "c")
        try AtomicFile.write(Array(SigningKeyFile.secretText(secret).utf8), to: directory + "/c.key")
        let yaml = """
            uplink: { url: http://collector.test:4318 }
            sources:
              - { name: cpu, type: cpu }
            remote_config:
              enabled: true
              trusted_keys: [\(directory)/a.pub, \(directory)/b.pub, \(directory)/c.key]
            """
        let issues = decode(yaml).issues.map(\.description)
        #expect(issues.count == 2, "\(issues)")
        #expect(issues.first?.contains("has key id 'ops', as '\(directory)/a.pub' has") == true)
        #expect(issues.last?.contains("this is a secret key file, a public one is needed here") == true)
    }
}
