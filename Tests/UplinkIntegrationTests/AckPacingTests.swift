import Foundation
import Testing
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkTestSupport

/// The collector paces acknowledgements (`CollectorConfiguration.ackInterval`), but never so that an agent's ring
/// waits on them: the agent sends its ring's size (`Uplink-Window`) and is acknowledged once a quarter of it is stored.
@Suite("Ack pacing", .timeLimit(.minutes(3)))
struct AckPacingTests {
    @Test("an agent with a 4 KiB ring tails 300 lines through a collector that paces acks an hour apart")
    func smallRingIsAcknowledgedByWindow() async throws {
        let directory = try Harness.temporaryDirectory("ack-window")
        let path = directory + "/app.log"
        var counter = 0
        let descriptor = TailEndToEndTests.openForAppend(path)
        TailEndToEndTests.append(descriptor, TailEndToEndTests.lines(300, from: &counter))
        close(descriptor)

        // Without the window only the stream's first ack would come before the hour is up: the tailer would wait
        // for room in its ring from about the 15th line on.
        let collector = try await InProcessCollector(name: "ack-window") { $0.ackInterval = .seconds(3600) }
        let agent = RunningAgent(
            url: collector.url, sources: [TailEndToEndTests.tailSource([path])], bufferBytes: 4096)
        let acknowledged = await agent.waitUntilAllAcknowledged(records: 300, timeout: .seconds(60))
        let statistics = agent.ring.statistics()
        try await agent.stop()
        try await collector.stop()

        #expect(acknowledged, "acknowledged \(statistics.acknowledged) of \(statistics.nextToWrite - 1)")
        #expect(statistics.sources.allSatisfy { $0.droppedOldest == 0 && $0.droppedNewest == 0 })
        let counters = try Harness.storedRecords(in: collector.dataDirectory).compactMap {
            TailEndToEndTests.counterAndOrigin($0.record)?.counter
        }
        #expect(Harness.exactlyOnceProblem(counters, total: 300) == nil)
    }
}
