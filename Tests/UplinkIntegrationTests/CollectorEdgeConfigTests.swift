import Foundation
import Testing
import UplinkAgent
import UplinkCollector
import UplinkConfig
import UplinkCore
import UplinkTestSupport

/// The `collector` section's limits and `tls` block: decoded, and checked at load time (what `uplink validate` runs),
/// with every problem at its file:line:col and key path.
@Suite("Collector edge configuration", .serialized, .timeLimit(.minutes(2)))
struct CollectorEdgeConfigTests {
    struct Files {
        let directory: String
        let authority: TestCertificateAuthority
        let server: TestCertificateAuthority.Certificate
        let other: TestCertificateAuthority.Certificate

        init() async throws {
            directory = try Harness.temporaryDirectory("edge-config")
            authority = try await TestCertificateAuthority.create(in: directory + "/pki")
            server = try await authority.issue(commonName: "collector.example", dnsNames: ["collector.example"])
            other = try await authority.issue(commonName: "other.example")
            try "not a certificate\n".write(toFile: directory + "/junk.pem", atomically: true, encoding: .utf8)
        }

        /// Loads `yaml` as `uplink` does; `collector` is the decoded section, nil when the file has an issue.
        func load(_ yaml: String) throws -> (collector: CollectorConfiguration?, issues: [ConfigIssue], path: String) {
            let path = directory + "/collector.yaml"
            try yaml.write(toFile: path, atomically: true, encoding: .utf8)
            var collector: CollectorConfiguration?
            let result = UplinkFile.load(path: path) { collector = CollectorConfiguration.decode($0) }
            return (result.value == nil ? nil : collector, result.issues, path)
        }
    }

    @Test("A valid block: defaults, relative paths resolved against the file's directory, client_auth defaulted")
    func validBlock() async throws {
        let files = try await Files()
        let (file, issues, _) = try files.load("""
            collector:
              request_head_timeout: 5s
              stream_idle_timeout: 2m
              max_streams: 200
              tls:
                cert_file: pki/collector.example-server.pem
                key_file: pki/collector.example-server.key
                client_ca_file: pki/uplink-test-ca.pem
                agent_identity: certificate
            """)
        #expect(issues.isEmpty, "\(issues)")
        let section = try #require(file)
        #expect(section.requestHeadTimeout == .seconds(5))
        #expect(section.streamIdleTimeout == .seconds(120))
        #expect(section.maxStreams == 200)
        let tls = try #require(section.tls)
        #expect(tls.certificateFile == files.server.certificateFile)
        #expect(tls.keyFile == files.server.keyFile)
        #expect(tls.clientCAFile == files.authority.certificateFile)
        #expect(tls.clientAuthentication == .required)
        #expect(tls.agentIdentity == .certificate)

        let (plain, plainIssues, _) = try files.load("collector:\n  listen: 127.0.0.1:4318\n")
        #expect(plainIssues.isEmpty)
        #expect(plain != nil)
        #expect(plain?.tls == nil)
        #expect(plain?.requestHeadTimeout == .seconds(10))
        #expect(plain?.streamIdleTimeout == .seconds(90))
        #expect(plain?.maxStreams == 1024)
    }

    @Test("Missing, unreadable and non-PEM files, and a key of another certificate: one issue each, at the key")
    func badFiles() async throws {
        let files = try await Files()
        let (_, issues, path) = try files.load("""
            collector:
              tls:
                cert_file: \(files.directory)/missing.pem
                key_file: \(files.directory)/junk.pem
                client_ca_file: \(files.directory)/junk.pem
            """)
        #expect(issues.count == 3, "\(issues)")
        #expect(issues.map(\.keyPath) == ["collector.tls.cert_file", "collector.tls.key_file", "collector.tls.client_ca_file"])
        #expect(issues[0].description.hasPrefix("\(path):3:16: collector.tls.cert_file: cannot read '\(files.directory)/missing.pem'"))
        #expect(issues[1].description.hasPrefix("\(path):4:15: collector.tls.key_file: '\(files.directory)/junk.pem' holds no usable PEM private key"))
        #expect(issues[2].description.hasPrefix("\(path):5:21: collector.tls.client_ca_file: '\(files.directory)/junk.pem' holds no PEM certificate"))

        let (_, mismatch, mismatchPath) = try files.load("""
            collector:
              tls:
                cert_file: \(files.server.certificateFile)
                key_file: \(files.other.keyFile)
            """)
        #expect(mismatch.count == 1, "\(mismatch)")
        #expect(mismatch.first?.description.hasPrefix(
            "\(mismatchPath):4:15: collector.tls.key_file: the key in '\(files.other.keyFile)' does not belong to the certificate in '\(files.server.certificateFile)'") == true,
            "\(mismatch)")
        #expect(mismatch.allSatisfy { !$0.description.contains("\n") })
    }

    @Test("Inconsistent settings and out-of-range limits are issues, not crashes")
    func inconsistentSettings() async throws {
        let files = try await Files()
        let (_, issues, path) = try files.load("""
            collector:
              request_head_timeout: 0s
              stream_idle_timeout: 48h
              max_streams: 0
              tls:
                cert_file: \(files.server.certificateFile)
                key_file: \(files.server.keyFile)
                client_auth: required
                agent_identity: certificate
                alpn: h3
            """)
        let described = issues.map(\.description)
        #expect(issues.map(\.keyPath) == [
            "collector.request_head_timeout", "collector.stream_idle_timeout", "collector.max_streams",
            "collector.tls.client_auth", "collector.tls.alpn",
        ], "\(described)")
        #expect(described[3].hasPrefix("\(path):8:18: collector.tls.client_auth: client_auth 'required' needs client_ca_file"))

        let (_, noCertificates, _) = try files.load("""
            collector:
              tls:
                cert_file: \(files.server.certificateFile)
                key_file: \(files.server.keyFile)
                agent_identity: certificate
            """)
        #expect(noCertificates.map(\.keyPath) == ["collector.tls.agent_identity"], "\(noCertificates)")

        let (_, noKey, _) = try files.load("collector:\n  tls:\n    cert_file: \(files.server.certificateFile)\n")
        #expect(noKey.map(\.keyPath) == ["collector.tls.key_file"], "\(noKey)")
    }

    @Test("uplink validate names file:line:col and the key for a key that does not match, and exits 78")
    func validateCommand() async throws {
        let files = try await Files()
        let path = files.directory + "/collector.yaml"
        try """
            collector:
              tls:
                cert_file: \(files.server.certificateFile)
                key_file: \(files.other.keyFile)
            """.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try await UplinkBinary.run(["validate", "--config", path])
        let text = result.standardError
        #expect(result.status == 78)
        #expect(text.contains("\(path):4:15: collector.tls.key_file: the key in"), "\(text)")
        #expect(!text.contains("Fatal error"))
    }
}
