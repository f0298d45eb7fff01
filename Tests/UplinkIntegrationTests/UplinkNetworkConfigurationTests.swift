import Foundation
import Testing
import UplinkAgent
import UplinkCollector
import UplinkConfig
import UplinkCore
import UplinkTestSupport
import UplinkTransport

/// `uplink.tls` and `uplink.proxy` in a configuration file: files are checked when it is loaded, every problem is one
/// issue with file:line:col and the key path.
@Suite("uplink.tls and uplink.proxy configuration")
struct UplinkNetworkConfigurationTests {
    let directory: String
    let ca: TestCertificateAuthority
    let client: TestCertificateAuthority.Certificate

    init() async throws {
        let pki = try await TestPKI("tls-config")
        (directory, ca, client) = (pki.authority.directory, pki.authority, pki.agent)
    }

    private func decode(_ uplinkLines: String, environment: ConfigEnvironment = [:]) -> ConfigResult<UplinkFile> {
        let yaml = "uplink:\n" + uplinkLines + "\nsources:\n  - { name: cpu, type: cpu }\n"
        return UplinkFile.decode(yaml, file: directory + "/uplink.yaml", environment: environment) {
            _ = CollectorConfiguration.decode($0)
        }
    }

    private func issues(_ uplinkLines: String) -> [String] {
        decode(uplinkLines).issues.map(\.description)
    }

    @Test("A complete tls block with paths relative to the file, and a proxy")
    func valid() throws {
        let result = decode("""
              url: https://10.0.0.5:4318
              proxy: http://edge:secret@proxy.internal:3128
              tls:
                ca_file: uplink-test-ca.pem
                cert_file: \(client.certificateFile)
                key_file: \(client.keyFile)
                server_name: Collector.Example
                min_version: "1.3"
            """)
        let file = try #require(result.value, "\(result.issues)")
        #expect(result.issues.isEmpty)
        #expect(file.uplink.tls == UplinkTLS(
            caFile: directory + "/uplink-test-ca.pem", certificateFile: client.certificateFile, keyFile: client.keyFile,
            serverName: "collector.example", minimumVersion: .tls13))
        #expect(file.uplink.proxy == .proxy(UplinkProxy(host: "proxy.internal", port: 3128, username: "edge", password: "secret")))
        let configuration = file.agentConfiguration(embedded: nil, environment: ["HTTPS_PROXY": "http://ignored:1"])
        #expect(configuration.uplink.proxy == UplinkProxy(host: "proxy.internal", port: 3128, username: "edge", password: "secret"))
        #expect(configuration.uplink.tls.serverName == "collector.example")
    }

    @Test("Without uplink.proxy the environment decides; 'none' ignores it; NO_PROXY exempts")
    func proxyFromEnvironment() throws {
        let environment: ConfigEnvironment = ["https_proxy": "proxy:3128", "NO_PROXY": ".internal"]
        let fromEnvironment = try #require(decode("  url: https://collector.example:4318").value)
        #expect(fromEnvironment.uplink.proxy == .environment)
        #expect(fromEnvironment.agentConfiguration(embedded: nil, environment: environment).uplink.proxy
            == UplinkProxy(host: "proxy", port: 3128))
        let exempt = try #require(decode("  url: https://collector.internal:4318").value)
        #expect(exempt.agentConfiguration(embedded: nil, environment: environment).uplink.proxy == nil)
        let none = try #require(decode("  url: https://collector.example:4318\n  proxy: none").value)
        #expect(none.uplink.proxy == .none)
        #expect(none.agentConfiguration(embedded: nil, environment: environment).uplink.proxy == nil)
        // http:// collectors follow HTTP_PROXY, not HTTPS_PROXY; an embedded collector never uses a proxy.
        let plain = try #require(decode("  url: http://collector.example:4318").value)
        #expect(plain.agentConfiguration(embedded: nil, environment: environment).uplink.proxy == nil)
        let embedded = try #require(decode("  url: embedded").value)
        #expect(embedded.agentConfiguration(embedded: EmbeddedCollectorTarget(url: "http://127.0.0.1:1", token: nil), environment: ["http_proxy": "p:1"]).uplink.proxy == nil)
        // SSL_CERT_FILE reaches the TLS settings.
        let trust = fromEnvironment.agentConfiguration(embedded: nil, environment: ["SSL_CERT_FILE": ca.certificateFile])
        #expect(trust.uplink.tls.environmentCAFile == ca.certificateFile)
    }

    @Test("Missing and broken files, a key of another certificate: one issue each, at the key")
    func badFiles() async throws {
        let path = directory + "/uplink.yaml"
        #expect(issues("""
              url: https://collector.example:4318
              tls:
                ca_file: missing.pem
            """) == ["\(path):4:14: uplink.tls.ca_file: cannot read '\(directory)/missing.pem': No such file or directory"])

        try "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"
            .write(toFile: directory + "/broken.pem", atomically: true, encoding: .utf8)
        let broken = issues("""
              url: https://collector.example:4318
              tls:
                ca_file: broken.pem
            """)
        #expect(broken.count == 1)
        #expect(broken.first?.hasPrefix("\(path):4:14: uplink.tls.ca_file: '\(directory)/broken.pem' is not a PEM CA bundle") == true, "\(broken)")

        let other = try await ca.issue(commonName: "agent-2", usage: .client)
        #expect(issues("""
              url: https://collector.example:4318
              tls:
                cert_file: \(client.certificateFile)
                key_file: \(other.keyFile)
            """) == [
                "\(path):5:15: uplink.tls.key_file: the key in '\(other.keyFile)' does not belong to the certificate in '\(client.certificateFile)'"
            ])

        #expect(issues("""
              url: https://collector.example:4318
              tls:
                cert_file: \(client.certificateFile)
            """) == [
                "\(path):4:16: uplink.tls.key_file: 'cert_file' is set without 'key_file' (hint: a client certificate needs both its certificate and its key)"
            ])
    }

    @Test("Wrong values: min_version, server_name, use_system_trust alone, tls with http, unknown keys, bad proxy")
    func badValues() {
        let path = directory + "/uplink.yaml"
        let found = issues("""
              url: http://collector.example:4318
              proxy: https://proxy:443
              tls:
                min_version: "1.1"
                server_name: "bad name"
                use_system_trust: true
                ca_fil: x.pem
            """)
        #expect(found == [
            "\(path):3:10: uplink.proxy: invalid proxy URL 'https://proxy:443': the scheme must be http (a CONNECT proxy reached over plain HTTP), not 'https' (hint: write 'http://host:port' (optionally 'http://user:password@host:port'), or 'none')",
            "\(path):5:5: uplink.tls: 'tls' applies only to an https:// url (hint: use an https:// url, or remove 'tls')",
            "\(path):5:18: uplink.tls.min_version: invalid value '1.1' (hint: did you mean '1.2'? allowed values: 1.2, 1.3)",
            "\(path):6:18: uplink.tls.server_name: 'bad name' is not a host name (hint: the DNS name the collector's certificate carries)",
            "\(path):7:23: uplink.tls.use_system_trust: 'use_system_trust' only matters with 'ca_file' (hint: without 'ca_file' the system trust store is always used)",
            "\(path):8:5: uplink.tls.ca_fil: unknown key 'ca_fil' (hint: did you mean 'ca_file'? allowed keys: ca_file, use_system_trust, cert_file, key_file, server_name, min_version)",
        ], "\(found)")
    }

    @Test("uplink validate reports a TLS file problem with file:line:col and exits 78; a good tls block validates")
    func validateCommand() async throws {
        let good = directory + "/good.yaml"
        try """
            uplink:
              url: https://collector.example:4318
              tls:
                ca_file: \(ca.certificateFile)
                cert_file: \(client.certificateFile)
                key_file: \(client.keyFile)
            sources:
              - { name: cpu, type: cpu }
            """.write(toFile: good, atomically: true, encoding: .utf8)
        let bad = directory + "/bad.yaml"
        try """
            uplink:
              url: https://collector.example:4318
              tls:
                cert_file: \(client.certificateFile)
                key_file: /nonexistent/agent.key
            sources:
              - { name: cpu, type: cpu }
            """.write(toFile: bad, atomically: true, encoding: .utf8)
        for (file, expectedStatus) in [(good, Int32(0)), (bad, Int32(78))] {
            let output = file + ".out"
            let process = try ChildProcess([try UplinkBinary.path(), "validate", "--config", file], outputPath: output)
            #expect(await process.waitForExit(seconds: 60))
            #expect(process.exitStatus.map { ($0 >> 8) & 0xff } == expectedStatus)
            let text = try String(contentsOfFile: output, encoding: .utf8)
            if expectedStatus == 0 {
                #expect(text.contains("\(good): valid: agent"), "\(text)")
            } else {
                #expect(text.contains("\(bad):5:15: uplink.tls.key_file: cannot read '/nonexistent/agent.key': No such file or directory"), "\(text)")
                #expect(text.contains("1 configuration issue; nothing was started"), "\(text)")
            }
        }
    }
}
