import Foundation
import ServiceLifecycle
import Testing
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkTestSupport
import UplinkTransport

/// A real agent (generator source, ring, uplink whose `uplink.tls` trusts a private CA) streaming to an
/// in-process collector with TLS, over loopback.
@Suite("Agent to collector over TLS and HTTP/2", .serialized, .timeLimit(.minutes(6)))
struct CollectorTLSEndToEndTests {
    struct PKI {
        let directory: String
        let authority: TestCertificateAuthority
        let server: TestCertificateAuthority.Certificate
        let agent: TestCertificateAuthority.Certificate

        init(_ name: String) async throws {
            directory = try Harness.temporaryDirectory(name)
            authority = try await TestCertificateAuthority.create(in: directory + "/ca")
            server = try await authority.issue(commonName: "localhost", ipAddresses: ["127.0.0.1"])
            agent = try await authority.issue(commonName: "edge-agent-1", usage: .client)
        }

        /// The agent's TLS settings: trusts the CA, presents the agent's certificate.
        var agentTLS: UplinkTLS {
            UplinkTLS(caFile: authority.certificateFile, certificateFile: agent.certificateFile, keyFile: agent.keyFile)
        }

        func collector(streamIdleTimeout: Duration = .seconds(90)) async throws -> BackgroundCollector {
            var configuration = CollectorConfiguration()
            configuration.port = 0
            configuration.dataDirectory = directory + "/data"
            configuration.stdoutSink = false
            configuration.streamIdleTimeout = streamIdleTimeout
            configuration.tls = CollectorTLS(
                certificateFile: server.certificateFile, keyFile: server.keyFile, clientCAFile: authority.certificateFile,
                clientAuthentication: .required, agentIdentity: .certificate)
            return try await BackgroundCollector.start(configuration: configuration, logger: Harness.logger)
        }
    }

    /// The agent of these tests: `edge-agent-1`, with the given sources and uplink tuning, run in a service group.
    final class TLSAgent: Sendable {
        let agent: Agent
        private let group: ServiceGroup
        private let task: Task<Void, any Error>

        init(port: Int, tls: UplinkTLS, sources: [AgentConfiguration.NamedSource], tune: (inout UplinkConfiguration) -> Void) {
            var uplink = UplinkConfiguration(
                url: "https://127.0.0.1:\(port)", agentID: "edge-agent-1", jitterSeed: 11, tls: tls)
            uplink.backoff = Backoff(initial: .milliseconds(20), multiplier: 2, maximum: .milliseconds(400))
            tune(&uplink)
            agent = Agent(
                configuration: AgentConfiguration(
                    uplink: uplink, sources: sources, bufferBytes: 8 << 20,
                    stateDirectory: Harness.agentStateDirectory()),
                logger: Harness.logger)
            group = ServiceGroup(
                configuration: .init(services: agent.serviceConfigurations, gracefulShutdownSignals: [], logger: Harness.logger))
            task = Task { [group] in try await group.run() }
        }

        func stop() async throws {
            await group.triggerGracefulShutdown()
            try await task.value
        }
    }

    @Test("mTLS required, agent_identity certificate, TLS 1.3 and h2: 5,000 records stored exactly once")
    func recordsArriveExactlyOnce() async throws {
        let pki = try await PKI("tls-e2e")
        let collector = try await pki.collector()
        let total = 5_000
        let agent = TLSAgent(
            port: collector.port, tls: pki.agentTLS, sources: [.generator(rate: 5_000, count: total)]) { _ in }
        var seen: OpenStream?
        let streaming = await eventually(timeout: .seconds(30)) {
            seen = collector.collector.openStreams().first
            return seen != nil
        }
        #expect(streaming)
        #expect(seen?.httpVersion == "HTTP/2")
        #expect(seen?.tlsVersion == "TLSv1.3")
        #expect(seen?.certificateSubject == "CN=edge-agent-1")
        let ring = agent.agent.ring
        let acknowledged = await eventually(timeout: .seconds(60)) {
            let statistics = ring.statistics()
            return statistics.nextToWrite > UInt64(total) && statistics.acknowledged + 1 >= statistics.nextToWrite
        }
        #expect(acknowledged)
        try await agent.stop()
        let edge = collector.collector.edgeStatistics()
        try await collector.stop()

        let stored = try Harness.storedRecords(in: pki.directory + "/data")
        #expect(stored.count == total)
        #expect(Harness.exactlyOnceProblem(stored.compactMap { Harness.generatorCounter($0.record) }, total: total) == nil)
        #expect(edge.http2Streams >= 1 && edge.http2Streams == edge.tlsStreams)
        #expect(edge.identityRefused == 0 && edge.tlsHandshakeFailures == 0)
    }

    @Test("An idle HTTP/2 stream kept alive only by heartbeats, for several times the collector's idle timeout")
    func heartbeatsKeepIdleHTTP2StreamAlive() async throws {
        try await CPUGate.exclusive {
            let pki = try await PKI("tls-idle")
            // Twenty heartbeats per idle timeout: room for a busy machine that delays a few.
            let collector = try await pki.collector(streamIdleTimeout: .seconds(3))
            let agent = TLSAgent(port: collector.port, tls: pki.agentTLS, sources: [.generator(rate: 1_000, count: 10)]) {
                $0.heartbeatInterval = .milliseconds(150)
            }
            let ring = agent.agent.ring
            #expect(await eventually(timeout: .seconds(30)) { ring.statistics().acknowledged >= 10 })
            // 80 heartbeats at 150 ms: about 12 s of a stream that carries nothing else, four idle timeouts.
            let heartbeats = await eventually(timeout: .seconds(90)) { collector.collector.statistics().heartbeats >= 80 }
            #expect(heartbeats)
            let uplink = agent.agent.uplink.statistics()
            #expect(uplink.streamsOpened == 1, "the stream was cut: \(String(describing: uplink.lastFailure))")
            #expect(uplink.failures == 0)
            #expect(collector.collector.edgeStatistics().idleTimeouts == 0)
            #expect(collector.collector.openStreams().first?.httpVersion == "HTTP/2")
            try await agent.stop()
            try await collector.stop()
        }
    }

    @Test("Control: without heartbeats the same idle HTTP/2 stream is cut by the idle timeout, and the agent reconnects")
    func withoutHeartbeatsTheStreamIsCut() async throws {
        try await CPUGate.exclusive {
            let pki = try await PKI("tls-idle-cut")
            let collector = try await pki.collector(streamIdleTimeout: .milliseconds(500))
            let agent = TLSAgent(port: collector.port, tls: pki.agentTLS, sources: [.generator(rate: 1_000, count: 10)]) {
                $0.heartbeatInterval = .seconds(600)
                $0.stallTimeout = .seconds(600)
            }
            let cut = await eventually(timeout: .seconds(60)) {
                collector.collector.edgeStatistics().idleTimeouts >= 1 && agent.agent.uplink.statistics().streamsOpened >= 2
            }
            #expect(cut)
            try await agent.stop()
            try await collector.stop()
        }
    }
}
