import Foundation
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport
import UplinkTransport

/// An idle stream through a real nginx whose `proxy_read_timeout` is shorter than the test: only the heartbeats and
/// the collector's answers to them carry bytes, in both directions, so nginx must never time the stream out.
@Suite("Idle streams through nginx", .serialized, .timeLimit(.minutes(3)))
struct NginxIdleStreamTests {
    @Test("An idle stream survives three proxy timeouts over HTTP/1.1 and over HTTP/2", arguments: [false, true])
    func idleStreamOutlivesTheProxyTimeout(http2: Bool) async throws {
        let pki = try await TestPKI("idle-\(http2)")
        // The collector's own account (replacements, why a stream ended) goes into the failure message.
        let collectorLog = LogCapture(level: .debug)
        let collector = try await InProcessCollector(name: "nginx-idle", logger: collectorLog.logger)
        let proxyTimeoutSeconds = 5
        let nginxConfiguration = TestNginx.Configuration(
            upstreamPort: collector.port, tls: .init(certificate: pki.server, clientCAFile: pki.authority.certificateFile),
            http2: http2, proxyTimeoutSeconds: proxyTimeoutSeconds)
        try await TestNginx.withNginx(nginxConfiguration) { nginx in
            var uplink = UplinkConfiguration(url: nginx.url, agentID: "agent-1", tls: pki.mutualTLS)
            uplink.heartbeatInterval = .milliseconds(250)
            let agent = RunningAgent(uplink, sources: [])
            #expect(await eventually(timeout: .seconds(30)) { agent.uplink.statistics().state == .streaming })
            // A slow set-up on a loaded machine can leave an earlier attempt behind (nginx answered it 408 while the
            // collector was slow to send `resume`). Once in CI the collector read that request only after the next
            // stream was up and let it take over, cutting the live stream 0.14 s after it opened; the collector now
            // drops such a request (CollectorConcurrencyTests shows it). The quiet period still starts only once the
            // stream has carried 8 heartbeats (2 s, well inside one proxy timeout), so only the idle stream's own
            // fate is judged.
            let heartbeatsAtOpen = collector.collector.statistics().heartbeats
            #expect(
                await eventually(timeout: .seconds(30)) {
                    agent.uplink.statistics().state == .streaming
                        && collector.collector.statistics().heartbeats >= heartbeatsAtOpen + 8
                })
            let heartbeatsBefore = collector.collector.statistics().heartbeats
            let before = agent.uplink.statistics()
            let collectorLogBeforeQuiet = collectorLog.all.count
            let quietSince = WallClock.nowNanoseconds()
            // Only what nginx logs from here on is about the idle stream: on a loaded machine a slow set-up (the
            // in-process collector answering late) may have timed out an earlier attempt.
            let errorLogBytesBeforeQuiet = nginx.errorLog().utf8.count
            // Three proxy timeouts of silence but for heartbeats (20 heartbeats per timeout: slack for a busy machine).
            try await Task.sleep(for: .seconds(3 * proxyTimeoutSeconds))
            let statistics = agent.uplink.statistics()
            // Once (CI, and a local full run) the stream broke with an EOF in the middle of the response while nginx
            // logged nothing: say when, what nginx's access log has (status, bytes), and what the collector saw.
            let brokeAfter = statistics.lastFailureTime.map { "\(Double($0 - quietSince) / 1e9) s into the quiet period" }
            let context = """
                \(String(describing: statistics.lastFailure)), \(brokeAfter ?? "-"); heartbeats sent \(statistics.heartbeatsSent); \
                collector: \(Self.summary(collector.collector.statistics())); nginx access log: \(nginx.accessLog().suffix(4)); \
                nginx error log: \(nginx.errorLog().suffix(600)); \
                collector log: \(collectorLog.all.map(\.description).suffix(collectorLog.all.count - collectorLogBeforeQuiet + 6))
                """
            #expect(statistics.streamsOpened == before.streamsOpened, "the stream was reopened: \(context)")
            #expect(statistics.failures == before.failures, "\(context)")
            #expect(collector.collector.statistics().heartbeats > heartbeatsBefore)
            let errorsDuringQuiet = String(decoding: nginx.errorLog().utf8.dropFirst(errorLogBytesBeforeQuiet), as: UTF8.self)
            #expect(!errorsDuringQuiet.contains("timed out"), "\(errorsDuringQuiet.suffix(600))")
            try await agent.stop()
        }
        try await collector.stop()
    }

    private static func summary(_ statistics: CollectorStatistics) -> String {
        "streams accepted \(statistics.streamsAccepted), replaced \(statistics.streamsReplaced), active \(statistics.activeStreams), heartbeats \(statistics.heartbeats)"
    }
}
