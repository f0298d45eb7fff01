import NIOPosix
import Testing
import UplinkCore
import UplinkObservability
import UplinkTestSupport
@testable import UplinkTransport
import UplinkWire

@testable import UplinkAgent

/// The agent's `/metrics` counts are read from the same snapshots as `/v1/status` when scraped: each count is kept
/// once (the ring's per-source counters, the uplink's statistics), so the two cannot disagree.
@Suite("Agent /metrics from the status snapshots")
struct AgentMetricsTests {
    @Test("appended and dropped records per source, the buffer's fill, a hook registered twice")
    func ringCounts() async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let agent = Harness.agentNeverRun(id: "metrics", bufferBytes: 4 << 10, on: loops.next())
        let observer = AgentObserver(agent: agent, version: "test")
        let exposition = MetricsExposition()
        let hook = observer.registerSeries(in: exposition)
        let ring = agent.ring
        let app = ring.registerSource("app")
        let encoder = NDJSONFrameEncoder()
        // 4 KiB of ring and frames of ~200 bytes: the later appends evict the earlier ones (drop_oldest).
        for index in 0..<100 {
            let record = Record.log(String(repeating: "x", count: 150) + "\(index)", source: "app", timestamp: 1)
            _ = ring.append(encoder.frame(for: record), source: app)
        }
        _ = ring.append([UInt8](repeating: 0x20, count: 8 << 10), source: app)

        func text() -> String { String(decoding: exposition.render(), as: UTF8.self) }
        let counts = try #require(ring.statistics().source("app"))
        #expect(counts.appended == 100)
        #expect(counts.droppedOldest > 0)
        let scraped = text()
        #expect(scraped.contains(#"uplink_records_appended_total{source="app"} 100"#), "\(scraped)")
        #expect(scraped.contains(#"uplink_records_dropped_total{source="app",reason="buffer_full_drop_oldest"} \#(counts.droppedOldest)"#))
        #expect(scraped.contains(#"uplink_records_dropped_total{source="app",reason="larger_than_buffer"} 1"#))
        #expect(scraped.contains("uplink_ring_used_bytes \(ring.statistics().usedBytes)"))
        // The acknowledged sequence is the ring's: it does not start over with the uplink a reload makes.
        var newest: UInt64 = 0
        _ = ring.readUnsent(maxBytes: 1 << 20) { sequence, _, _ in newest = max(newest, sequence) }
        #expect(newest > 0)
        ring.acknowledge(through: newest)
        #expect(text().contains("uplink_acknowledged_sequence \(newest)"))

        // The endpoint restarted (a second hook on the same exposition): the series continue, not doubled.
        exposition.removeScrapeHook(hook)
        let again = observer.registerSeries(in: exposition)
        _ = ring.append(encoder.frame(for: .log("one more", source: "app", timestamp: 1)), source: app)
        #expect(text().contains(#"uplink_records_appended_total{source="app"} 101"#))
        exposition.removeScrapeHook(again)
        try await loops.shutdownGracefully()
    }

    @Test("the stream's totals add up the uplinks a reload replaced")
    func totalsAcrossUplinks() {
        var first = UplinkStatistics()
        first.connectionAttempts = 3
        first.recordsWritten = 40
        first.bytesWritten = 4000
        first.lineBytesWritten = 9000
        first.heartbeatsSent = 2
        first.failuresByReason = ["transport": 2]
        var second = UplinkStatistics()
        second.connectionAttempts = 1
        second.recordsWritten = 5
        second.failuresByReason = ["transport": 1, "status_503": 1]
        var totals = UplinkTotals()
        totals.add(first)
        totals.add(second)
        #expect(totals.connectionAttempts == 4)
        #expect(totals.recordsWritten == 45)
        #expect(totals.bytesWritten == 4000)
        #expect(totals.lineBytesWritten == 9000)
        #expect(totals.heartbeatsSent == 2)
        #expect(totals.failuresByReason == ["transport": 3, "status_503": 1])
    }
}
