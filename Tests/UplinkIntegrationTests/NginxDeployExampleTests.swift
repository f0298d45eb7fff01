import Foundation
import Testing
import UplinkAgent
import UplinkCore
import UplinkTestSupport
import UplinkTransport

/// deploy/nginx/uplink.conf, the nginx configuration docs/deploy.md recommends, run as is (paths and ports
/// substituted) in front of an in-process collector.
@Suite("deploy/nginx/uplink.conf", .serialized, .timeLimit(.minutes(3)))
struct NginxDeployExampleTests {
    static let example = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/nginx/uplink.conf").path

    /// The example with its placeholders replaced; fails when a placeholder is no longer in the file.
    static func substituted(collectorPort: Int, pki: TestPKI) throws -> String {
        var text = try String(contentsOfFile: example, encoding: .utf8)
        let replacements = [
            ("listen 443 ssl http2;", "listen 127.0.0.1:@PORT@ ssl http2;"),
            ("server 127.0.0.1:4318;", "server 127.0.0.1:\(collectorPort);"),
            ("/etc/nginx/uplink/collector.pem", pki.server.certificateFile),
            ("/etc/nginx/uplink/collector.key", pki.server.keyFile),
            ("/etc/nginx/uplink/fleet-ca.pem", pki.authority.certificateFile),
        ]
        for (placeholder, value) in replacements {
            guard text.contains(placeholder) else { throw TestNginx.Failure(description: "'\(placeholder)' not in \(example)") }
            text = text.replacingOccurrences(of: placeholder, with: value)
        }
        return text
    }

    @Test("A stream through the example (HTTP/2, mTLS) survives a reload bounded by worker_shutdown_timeout; every record arrives once")
    func exampleCarriesTheStream() async throws {
        let pki = try await TestPKI("deploy-example")
        let collector = try await InProcessCollector(name: "deploy-example")
        let total = 3_000
        let nginxConfiguration = TestNginx.Configuration(
            upstreamPort: collector.port, tls: .init(certificate: pki.server), http2: true,
            serverBlocks: try Self.substituted(collectorPort: collector.port, pki: pki))
        try await TestNginx.withNginx(nginxConfiguration) { nginx in
            var tls = pki.mutualTLS
            tls.serverName = "localhost"
            let agent = RunningAgent(
                UplinkConfiguration(url: nginx.url, agentID: "agent-1", tls: tls),
                sources: [.generator(rate: 1_000, count: total)])
            #expect(await eventually(timeout: .seconds(30)) { agent.uplink.statistics().acknowledged >= 500 })
            let opened = agent.uplink.statistics().streamsOpened
            try await nginx.reload()
            #expect(await eventually(timeout: .seconds(30)) { agent.uplink.statistics().streamsOpened > opened })
            #expect(await agent.waitUntilAllAcknowledged(records: total, timeout: .seconds(60)))
            try await agent.stop()
            let streams = nginx.accessLog().filter { $0.contains("/v1/stream") }
            #expect(streams.allSatisfy { $0.hasPrefix("HTTP/2.0 TLSv1.3 200 verify=SUCCESS") }, "\(streams)")
        }
        try await collector.stop()
        let counters = try Harness.storedRecords(in: collector.dataDirectory).compactMap { Harness.generatorCounter($0.record) }
        #expect(Harness.exactlyOnceProblem(counters, total: total) == nil)
    }
}
