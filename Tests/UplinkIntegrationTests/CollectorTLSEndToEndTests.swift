import Foundation
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
    /// A collector presenting `pki`'s server certificate, requiring a client certificate from `pki`'s authority and
    /// taking the agent's identity from it.
    static func collector(_ pki: TestPKI, streamIdleTimeout: Duration = .seconds(90)) async throws -> InProcessCollector {
        try await InProcessCollector(name: "tls-e2e") {
            $0.streamIdleTimeout = streamIdleTimeout
            $0.tls = pki.collectorTLS(clientAuthentication: .required, agentIdentity: .certificate)
        }
    }

    /// The agent of these tests: `agent-1` (as its certificate names it) over HTTPS to `port`, with the given sources and uplink tuning.
    static func agent(
        port: Int, tls: UplinkTLS, sources: [AgentConfiguration.NamedSource], tune: (inout UplinkConfiguration) -> Void
    ) -> RunningAgent {
        RunningAgent(
            UplinkConfiguration(url: "https://127.0.0.1:\(port)", agentID: "agent-1", jitterSeed: 11, tls: tls),
            sources: sources, tune: tune)
    }

    @Test("mTLS required, agent_identity certificate, TLS 1.3 and h2: 5,000 records stored exactly once")
    func recordsArriveExactlyOnce() async throws {
        let pki = try await TestPKI("tls-e2e")
        let collector = try await Self.collector(pki)
        let total = 5_000
        let agent = Self.agent(
            port: collector.port, tls: pki.agentTLS, sources: [.generator(rate: 5_000, count: total)]) { _ in }
        var seen: OpenStream?
        let streaming = await eventually(timeout: .seconds(30)) {
            seen = collector.collector.openStreams().first
            return seen != nil
        }
        #expect(streaming)
        #expect(seen?.httpVersion == "HTTP/2")
        #expect(seen?.tlsVersion == "TLSv1.3")
        #expect(seen?.certificateSubject == "CN=agent-1")
        #expect(await agent.waitUntilAllAcknowledged(records: total, timeout: .seconds(60)))
        let agentStatistics = agent.uplink.statistics()
        try await agent.stop()
        let edge = collector.collector.edgeStatistics()
        try await collector.stop()

        let stored = try Harness.storedRecords(in: collector.dataDirectory)
        #expect(stored.count == total)
        #expect(Harness.exactlyOnceProblem(stored.compactMap { Harness.generatorCounter($0.record) }, total: total) == nil)
        #expect(edge.http2Streams >= 1 && edge.http2Streams == edge.tlsStreams)
        // A loaded machine can make a handshake outlast a timeout (the agent's connect timeout, the collector's
        // handshake deadline), which the collector counts as failed; each such one is also a transport failure of the
        // agent. A handshake that failed otherwise (a certificate refused) would not let 5,000 records through.
        let agentTransportFailures = UInt64(agentStatistics.failuresByReason["transport", default: 0])
        #expect(
            edge.identityRefused == 0 && edge.tlsHandshakeFailures <= agentTransportFailures,
            "collector: \(edge); agent: \(agentStatistics)")
    }

    @Test("An idle HTTP/2 stream kept alive only by heartbeats, for several times the collector's idle timeout")
    func heartbeatsKeepIdleHTTP2StreamAlive() async throws {
        try await CPUGate.exclusive {
            let pki = try await TestPKI("tls-idle")
            // Twenty heartbeats per idle timeout: room for a busy machine that delays a few.
            let collector = try await Self.collector(pki, streamIdleTimeout: .seconds(3))
            let agent = Self.agent(port: collector.port, tls: pki.agentTLS, sources: [.generator(rate: 1_000, count: 10)]) {
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
            let pki = try await TestPKI("tls-idle-cut")
            let collector = try await Self.collector(pki, streamIdleTimeout: .milliseconds(500))
            let agent = Self.agent(port: collector.port, tls: pki.agentTLS, sources: [.generator(rate: 1_000, count: 10)]) {
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
