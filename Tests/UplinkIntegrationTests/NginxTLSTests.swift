import Foundation
import Testing
import UplinkAgent
import UplinkCore
import UplinkTestSupport
import UplinkTransport

/// The agent through a real nginx that terminates TLS 1.3 with a private CA and requires client certificates, in
/// front of a plain in-process collector: over HTTP/1.1 and over HTTP/2 (ALPN).
@Suite("Agent through nginx with TLS and mTLS", .serialized, .timeLimit(.minutes(3)))
struct NginxTLSTests {
    @Test("Records arrive exactly once through nginx (TLS 1.3, private CA, client certificate required)", arguments: [false, true])
    func exactlyOnceThroughNginx(http2: Bool) async throws {
        let pki = try await TestPKI("nginx-\(http2)")
        let collector = try await InProcessCollector(name: "nginx-tls")
        let total = 3_000
        let nginxConfiguration = TestNginx.Configuration(
            upstreamPort: collector.port,
            tls: .init(certificate: pki.server, clientCAFile: pki.authority.certificateFile), http2: http2)
        try await TestNginx.withNginx(nginxConfiguration) { nginx in
            let agent = RunningAgent(
                UplinkConfiguration(url: nginx.url, agentID: "agent-1", tls: pki.mutualTLS),
                sources: [.generator(rate: 0, count: total)])
            let acknowledged = await agent.waitUntilAllAcknowledged(records: total, timeout: .seconds(60))
            #expect(acknowledged, "last failure: \(String(describing: agent.uplink.statistics().lastFailure)); nginx: \(nginx.errorLog().suffix(800))")
            try await agent.stop()
            #expect(agent.uplink.statistics().failures == 0)
            // The request is logged when it ends: give nginx a moment after the agent closed it.
            let logged = await eventually(timeout: .seconds(10)) { nginx.accessLog().contains { $0.contains("/v1/stream") } }
            #expect(logged)
            let line = nginx.accessLog().first { $0.contains("/v1/stream") } ?? ""
            #expect(line.hasPrefix(http2 ? "HTTP/2.0 TLSv1.3 200 verify=SUCCESS" : "HTTP/1.1 TLSv1.3 200 verify=SUCCESS"), "\(line)")
            #expect(line.contains("CN=agent-1"), "\(line)")
        }
        try await collector.stop()
        let stored = try Harness.storedRecords(in: collector.dataDirectory)
        let counters = stored.compactMap { Harness.generatorCounter($0.record) }
        #expect(Harness.exactlyOnceProblem(counters, total: total) == nil)
        #expect(stored.map(\.sequence).elementsEqual(1...UInt64(total)))
    }

    enum Refusal: String, CaseIterable, Sendable {
        case noCertificate, expiredCertificate, otherCA
    }

    @Test("nginx refuses a client without a certificate, with an expired one, or from another CA; the agent says why", arguments: Refusal.allCases)
    func refusedClients(refusal: Refusal) async throws {
        let pki = try await TestPKI("refuse-\(refusal)")
        var tls = UplinkTLS(caFile: pki.authority.certificateFile, minimumVersion: .tls13)
        switch refusal {
        case .noCertificate:
            break
        case .expiredCertificate:
            let expired = try await pki.expiredAgent()
            tls.certificateFile = expired.certificateFile
            tls.keyFile = expired.keyFile
        case .otherCA:
            let foreign = try await pki.foreignAgent()
            tls.certificateFile = foreign.certificateFile
            tls.keyFile = foreign.keyFile
        }
        let collector = try await InProcessCollector(name: "nginx-refuse")
        let nginxConfiguration = TestNginx.Configuration(
            upstreamPort: collector.port, tls: .init(certificate: pki.server, clientCAFile: pki.authority.certificateFile))
        try await TestNginx.withNginx(nginxConfiguration) { nginx in
            let agent = RunningAgent(
                UplinkConfiguration(url: nginx.url, agentID: "agent-1", tls: tls), sources: [.generator(rate: 0, count: 10)])
            let refused = await eventually(timeout: .seconds(20)) { agent.uplink.statistics().failures >= 1 }
            try await agent.stop()
            #expect(refused)
            let statistics = agent.uplink.statistics()
            #expect(statistics.lastFailure == .status(400))
            #expect(statistics.streamsOpened == 0)
            let expected = refusal == .noCertificate ? "No required SSL certificate was sent" : "The SSL certificate error"
            #expect(statistics.lastRejectionDetail?.contains(expected) == true, "\(String(describing: statistics.lastRejectionDetail))")
            // One error line that names the answer and where to look.
            #expect(
                agent.log.entries(at: .error).contains {
                    $0.message.hasPrefix("collector rejected the stream: collector answered HTTP 400 (400 Bad Request \(expected)")
                        && $0.message.contains("uplink.tls")
                },
                "\(agent.log.entries(at: .error).prefix(3))")
            if refusal == .expiredCertificate {
                #expect(agent.log.contains("the client certificate has expired"))
            }
            let nginxSays = refusal == .noCertificate ? "client sent no required SSL certificate" : "client SSL certificate verify error"
            #expect(nginx.errorLog().contains(nginxSays))
        }
        try await collector.stop()
        #expect(collector.recordsStored == 0)
    }

    @Test("An untrusted collector certificate fails with a log line that says TLS verification failed")
    func untrustedServer() async throws {
        let pki = try await TestPKI("untrusted")
        let collector = try await InProcessCollector(name: "nginx-untrusted")
        let nginxConfiguration = TestNginx.Configuration(upstreamPort: collector.port, tls: .init(certificate: pki.server))
        try await TestNginx.withNginx(nginxConfiguration) { nginx in
            // The system store does not hold the test CA.
            let agent = RunningAgent(UplinkConfiguration(url: nginx.url, agentID: "agent-1"), sources: [.generator(rate: 0, count: 10)])
            let failed = await eventually(timeout: .seconds(20)) { agent.uplink.statistics().failures >= 1 }
            try await agent.stop()
            #expect(failed)
            guard case .transport(let text) = agent.uplink.statistics().lastFailure else {
                Issue.record("expected a transport failure, got \(String(describing: agent.uplink.statistics().lastFailure))")
                return
            }
            #expect(text.contains("TLS failed: the collector's certificate is not trusted"), "\(text)")
            #expect(agent.log.contains("stream broken: connection failed: TLS failed: the collector's certificate is not trusted"))
        }
        try await collector.stop()
    }

    @Test("Without ca_file, SSL_CERT_FILE names the trusted bundle (a private CA is trusted, the system store is not needed)")
    func sslCertFileEnvironment() async throws {
        let pki = try await TestPKI("ssl-cert-file")
        let collector = try await InProcessCollector(name: "nginx-ssl-cert-file")
        let nginxConfiguration = TestNginx.Configuration(upstreamPort: collector.port, tls: .init(certificate: pki.server))
        try await TestNginx.withNginx(nginxConfiguration) { nginx in
            let tls = UplinkTLS().withTrustEnvironment { $0 == "SSL_CERT_FILE" ? pki.authority.certificateFile : nil }
            let agent = RunningAgent(
                UplinkConfiguration(url: nginx.localhostURL, agentID: "agent-1", tls: tls), sources: [.generator(rate: 0, count: 100)])
            #expect(await agent.waitUntilAllAcknowledged(records: 100, timeout: .seconds(30)))
            try await agent.stop()
            #expect(agent.uplink.statistics().failures == 0, "\(String(describing: agent.uplink.statistics().lastFailure))")
        }
        try await collector.stop()
    }

    @Test("server_name verifies a certificate that names only the server name while connecting to 127.0.0.1; without it verification fails")
    func serverNameOverride() async throws {
        let pki = try await TestPKI("server-name")
        let named = try await pki.authority.issue(commonName: "collector.test", dnsNames: ["collector.test"])
        let collector = try await InProcessCollector(name: "nginx-server-name")
        let nginxConfiguration = TestNginx.Configuration(upstreamPort: collector.port, tls: .init(certificate: named))
        try await TestNginx.withNginx(nginxConfiguration) { nginx in
            let withName = RunningAgent(
                UplinkConfiguration(url: nginx.url, agentID: "agent-1", tls: UplinkTLS(caFile: pki.authority.certificateFile, serverName: "collector.test")),
                sources: [.generator(rate: 0, count: 100)])
            #expect(await withName.waitUntilAllAcknowledged(records: 100, timeout: .seconds(30)))
            try await withName.stop()
            #expect(withName.uplink.statistics().failures == 0, "\(String(describing: withName.uplink.statistics().lastFailure))")

            let withoutName = RunningAgent(
                UplinkConfiguration(url: nginx.url, agentID: "agent-2", tls: UplinkTLS(caFile: pki.authority.certificateFile)),
                sources: [.generator(rate: 0, count: 10)])
            let failed = await eventually(timeout: .seconds(20)) { withoutName.uplink.statistics().failures >= 1 }
            try await withoutName.stop()
            #expect(failed)
            #expect(withoutName.log.contains("TLS failed: the collector's certificate does not name the host in uplink.url (set uplink.tls.server_name"), "\(withoutName.log.warnings.prefix(2))")
        }
        try await collector.stop()
    }

    @Test("min_version 1.3 against a TLS 1.2-only server fails with a log line naming the version mismatch")
    func minimumVersion() async throws {
        let pki = try await TestPKI("min-version")
        let collector = try await InProcessCollector(name: "nginx-min-version")
        let nginxConfiguration = TestNginx.Configuration(
            upstreamPort: collector.port, tls: .init(certificate: pki.server, protocols: "TLSv1.2"))
        try await TestNginx.withNginx(nginxConfiguration) { nginx in
            let agent = RunningAgent(
                UplinkConfiguration(url: nginx.url, agentID: "agent-1", tls: UplinkTLS(caFile: pki.authority.certificateFile, minimumVersion: .tls13)),
                sources: [.generator(rate: 0, count: 10)])
            let failed = await eventually(timeout: .seconds(20)) { agent.uplink.statistics().failures >= 1 }
            try await agent.stop()
            #expect(failed)
            #expect(agent.log.contains("no TLS version in common with the collector"), "\(agent.log.warnings.prefix(2))")

            // The default (1.2 or later) connects.
            let relaxed = RunningAgent(
                UplinkConfiguration(url: nginx.url, agentID: "agent-2", tls: UplinkTLS(caFile: pki.authority.certificateFile)),
                sources: [.generator(rate: 0, count: 10)])
            #expect(await relaxed.waitUntilAllAcknowledged(records: 10, timeout: .seconds(30)))
            try await relaxed.stop()
            let stream = nginx.accessLog().first { $0.contains("/v1/stream") } ?? ""
            #expect(stream.hasPrefix("HTTP/1.1 TLSv1.2 200"), "\(stream)")
        }
        try await collector.stop()
    }

    @Test("A client certificate rotated on disk during a stream is presented on the next connection; nothing is lost", arguments: [false, true])
    func rotationDuringStream(http2: Bool) async throws {
        let pki = try await TestPKI("rotate-\(http2)")
        let oldSerial = try await pki.agent.serialNumber()
        let collector = try await InProcessCollector(name: "nginx-rotate")
        let total = 4_000
        let nginxConfiguration = TestNginx.Configuration(
            upstreamPort: collector.port,
            tls: .init(certificate: pki.server, clientCAFile: pki.authority.certificateFile), http2: http2)
        try await TestNginx.withNginx(nginxConfiguration) { nginx in
            let agent = RunningAgent(
                UplinkConfiguration(url: nginx.url, agentID: "agent-1", tls: pki.mutualTLS),
                sources: [.generator(rate: 1_000, count: total)])
            #expect(await eventually(timeout: .seconds(30)) { agent.uplink.statistics().acknowledged >= 500 })
            // Rotate: the same names, new key and certificate, written in place (renamed over the old files).
            let rotated = try await pki.authority.issue(commonName: "agent-1", dnsNames: ["agent-1"], usage: .client)
            let newSerial = try await rotated.serialNumber()
            #expect(newSerial != oldSerial)
            #expect(rotated.certificateFile == pki.agent.certificateFile)
            // Force a reconnect: nginx reloads and its old worker closes the stream after worker_shutdown_timeout.
            let opened = agent.uplink.statistics().streamsOpened
            try await nginx.reload()
            #expect(await eventually(timeout: .seconds(30)) { agent.uplink.statistics().streamsOpened > opened })
            #expect(await agent.waitUntilAllAcknowledged(records: total, timeout: .seconds(60)))
            try await agent.stop()
            #expect(agent.log.contains("uplink.tls files changed on disk; the next connection uses them"))
            let logged = await eventually(timeout: .seconds(10)) {
                nginx.accessLog().filter { $0.contains("/v1/stream") }.count >= 2
            }
            let streams = nginx.accessLog().filter { $0.contains("/v1/stream") }
            #expect(logged, "\(streams)")
            #expect(streams.first?.contains("serial=\(oldSerial) ") == true, "\(streams)")
            #expect(streams.last?.contains("serial=\(newSerial) ") == true, "\(streams)")
            #expect(streams.allSatisfy { $0.contains("verify=SUCCESS") }, "\(streams)")
        }
        try await collector.stop()
        let stored = try Harness.storedRecords(in: collector.dataDirectory)
        let counters = stored.compactMap { Harness.generatorCounter($0.record) }
        #expect(Harness.exactlyOnceProblem(counters, total: total) == nil)
    }
}
