import Foundation
import Testing
import UplinkAgent
import UplinkCollector
import UplinkConfig
import UplinkCore
import UplinkTestSupport
import UplinkTransport

/// The agent through a real HTTP CONNECT proxy (tinyproxy on loopback).
@Suite("Agent through an HTTP CONNECT proxy", .serialized, .timeLimit(.minutes(3)))
struct ProxyTunnelTests {
    @Test("An http:// collector through tinyproxy: one CONNECT tunnel, records arrive exactly once")
    func plainThroughProxy() async throws {
        let collector = try await InProcessCollector(name: "proxy-plain")
        let total = 2_000
        try await TestTinyproxy.withTinyproxy { proxy in
            let agent = RunningAgent(
                UplinkConfiguration(url: collector.url, agentID: "agent-1", proxy: UplinkProxy(host: "127.0.0.1", port: proxy.port)),
                sources: [.generator(rate: 0, count: total)])
            #expect(await agent.waitUntilAllAcknowledged(records: total, timeout: .seconds(60)))
            try await agent.stop()
            #expect(agent.uplink.statistics().failures == 0)
            #expect(proxy.connectRequests() == ["127.0.0.1:\(collector.port)"], "\(proxy.log().suffix(1500))")
        }
        try await collector.stop()
        let counters = try Harness.storedRecords(in: collector.dataDirectory).compactMap { Harness.generatorCounter($0.record) }
        #expect(Harness.exactlyOnceProblem(counters, total: total) == nil)
    }

    @Test("An https:// collector (nginx, mTLS) through tinyproxy chosen by HTTPS_PROXY: TLS runs end to end in the tunnel")
    func tlsThroughProxyFromEnvironment() async throws {
        let pki = try await TestPKI("proxy-tls")
        let collector = try await InProcessCollector(name: "proxy-tls")
        let total = 1_000
        let nginxConfiguration = TestNginx.Configuration(
            upstreamPort: collector.port, tls: .init(certificate: pki.server, clientCAFile: pki.authority.certificateFile), http2: true)
        try await TestNginx.withNginx(nginxConfiguration) { nginx in
            try await TestTinyproxy.withTinyproxy(basicAuth: ("edge", "pass_word-42")) { proxy in
                // The configuration file path: uplink.proxy absent, so the environment decides.
                let yaml = """
                    uplink:
                      url: \(nginx.url)
                      tls:
                        ca_file: \(pki.authority.certificateFile)
                        cert_file: \(pki.agent.certificateFile)
                        key_file: \(pki.agent.keyFile)
                        min_version: "1.3"
                    sources:
                      - { name: gen, type: generator, rate: 0, count: \(total) }
                    """
                let result = UplinkFile.decode(yaml, file: "proxy.yaml", environment: [:]) { _ = CollectorConfiguration.decode($0) }
                let file = try #require(result.value, "\(result.issues)")
                let environment: ConfigEnvironment = [
                    "HTTPS_PROXY": "http://edge:pass%5Fword-42@127.0.0.1:\(proxy.port)", "NO_PROXY": "example.com,10.0.0.1",
                ]
                let configuration = file.agentConfiguration(embedded: nil, environment: environment)
                #expect(configuration.uplink.proxy == UplinkProxy(host: "127.0.0.1", port: proxy.port, username: "edge", password: "pass_word-42"))
                let agent = RunningAgent(configuration.uplink, sources: configuration.sources)
                #expect(await agent.waitUntilAllAcknowledged(records: total, timeout: .seconds(60)))
                try await agent.stop()
                #expect(agent.uplink.statistics().failures == 0)
                #expect(proxy.connectRequests() == ["127.0.0.1:\(nginx.port)"], "\(proxy.log().suffix(1500))")
            }
            let stream = nginx.accessLog().first { $0.contains("/v1/stream") } ?? ""
            #expect(stream.hasPrefix("HTTP/2.0 TLSv1.3 200 verify=SUCCESS"), "\(stream)")
        }
        try await collector.stop()
        let counters = try Harness.storedRecords(in: collector.dataDirectory).compactMap { Harness.generatorCounter($0.record) }
        #expect(Harness.exactlyOnceProblem(counters, total: total) == nil)
    }

    @Test("A proxy that requires credentials answers 407 without them; the agent logs a configuration error")
    func missingProxyCredentials() async throws {
        let collector = try await InProcessCollector(name: "proxy-407")
        try await TestTinyproxy.withTinyproxy(basicAuth: ("edge", "secret")) { proxy in
            let agent = RunningAgent(
                UplinkConfiguration(url: collector.url, agentID: "agent-1", proxy: UplinkProxy(host: "127.0.0.1", port: proxy.port)),
                sources: [.generator(rate: 0, count: 10)])
            let failed = await eventually(timeout: .seconds(20)) { agent.uplink.statistics().failures >= 1 }
            try await agent.stop()
            #expect(failed)
            #expect(agent.uplink.statistics().lastFailure == .status(407))
            #expect(agent.log.all.contains {
                $0.level == .error
                    && $0.message.hasPrefix("collector rejected the stream: collector answered HTTP 407 (the HTTP proxy requires credentials")
            })
        }
        try await collector.stop()
        #expect(collector.recordsStored == 0)
    }
}
