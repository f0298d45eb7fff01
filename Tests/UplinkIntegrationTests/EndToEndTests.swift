import Foundation
import Synchronization
import Testing
import UplinkAgent
import UplinkCore
import UplinkTestSupport

@Suite("End to end over loopback", .serialized, .timeLimit(.minutes(3)))
struct EndToEndTests {
    @Test("100,000 records arrive in order, each exactly once")
    func hundredThousandRecords() async throws {
        let collector = try await InProcessCollector(name: "e2e")
        let total = 100_000
        let agent = RunningAgent(url: collector.url, sources: [.generator(rate: 0, count: total)])
        #expect(await agent.waitUntilAllAcknowledged(records: total, timeout: .seconds(120)))
        try await agent.stop()
        try await collector.stop()

        let stored = try Harness.storedRecords(in: collector.dataDirectory)
        #expect(stored.count == total)
        let inOrder = stored.map(\.sequence).elementsEqual(1...UInt64(total))
        #expect(inOrder, "sequences are not 1...\(total) in order")
        let counters = stored.compactMap { Harness.generatorCounter($0.record) }
        #expect(counters.elementsEqual(0..<total), "records are not in generation order")
        #expect(Harness.exactlyOnceProblem(counters, total: total) == nil)
        let statistics = collector.collector.statistics()
        #expect(statistics.duplicatesDiscarded == 0)
        #expect(statistics.recordsMissing == 0)
    }

    @Test("An idle connected agent does not spin: no writes and no space events between heartbeats")
    func idleAgentDoesNotSpin() async throws {
        let collector = try await InProcessCollector(name: "idle")
        let agent = RunningAgent(url: collector.url, sources: [.generator(rate: 0, count: 10)]) { uplink in
            uplink.heartbeatInterval = .seconds(1)
        }
        #expect(await agent.waitUntilAllAcknowledged(records: 10, timeout: .seconds(30)))
        try await Task.sleep(for: .milliseconds(300))
        let start = ContinuousClock.now
        let before = agent.uplink.statistics()
        try await Task.sleep(for: .milliseconds(3500))
        let after = agent.uplink.statistics()
        // A loaded machine oversleeps: the bound below follows the time that really passed.
        let elapsed = ContinuousClock.now - start
        try await agent.stop()
        try await collector.stop()

        let heartbeats = after.heartbeatsSent - before.heartbeatsSent
        // About one heartbeat per second of silence, and nothing else: every write pass is a heartbeat. A spinning
        // agent would write hundreds.
        let seconds = Int((elapsed / .seconds(1)).rounded(.up))
        #expect((1...seconds + 1).contains(heartbeats), "\(heartbeats) heartbeats in \(elapsed)")
        #expect(after.writePasses - before.writePasses == heartbeats)
        #expect(after.spaceAvailableEvents == before.spaceAvailableEvents)
        #expect(after.dataAvailableEvents == before.dataAvailableEvents)
        #expect(after.recordsWritten == before.recordsWritten)
        #expect(after.failures == 0)
        #expect(collector.collector.statistics().heartbeats >= UInt64(heartbeats))
    }

    @Test("Graceful shutdown drains everything buffered before the body ends")
    func shutdownDrains() async throws {
        let collector = try await InProcessCollector(name: "drain")
        let agent = RunningAgent(url: collector.url, sources: [.generator(rate: 20_000, count: 5_000)])
        #expect(await eventually(timeout: .seconds(30)) { agent.ring.statistics().nextToWrite > 5_000 })
        try await agent.stop()
        let statistics = agent.ring.statistics()
        #expect(statistics.retainedFrames == 0)
        try await collector.stop()
        let stored = try Harness.storedRecords(in: collector.dataDirectory)
        #expect(stored.count == 5_000 - statistics.sources.reduce(0) { $0 + $1.droppedOldest })
    }

    @Test("A shutdown while the stream is still opening waits for it within the drain timeout, then drains")
    func shutdownWhileOpeningDrains() async throws {
        let collector = try await InProcessCollector(name: "drain-opening")
        let proxy = FaultProxy(upstreamPort: collector.port)
        try await proxy.start()
        proxy.setStalled(true)
        let total = 500
        let agent = RunningAgent(url: "http://127.0.0.1:\(proxy.port)", sources: [.generator(rate: 0, count: total)]) {
            uplink in
            uplink.stallTimeout = .seconds(60)
            uplink.drainTimeout = .seconds(60)
        }
        #expect(
            await eventually(timeout: .seconds(30)) {
                agent.ring.statistics().nextToWrite > UInt64(total) && agent.uplink.statistics().connectionAttempts >= 1
            })
        let stopped = Atomic(false)
        let stopping = Task {
            try await agent.stop()
            stopped.store(true, ordering: .releasing)
        }
        // The stream has no resume yet: an uplink that gave up here would leave every record in the ring.
        let stoppedWhileStalled = await eventually(timeout: .seconds(2)) { stopped.load(ordering: .acquiring) }
        #expect(!stoppedWhileStalled, "the shutdown gave up on a stream that was still opening")
        proxy.setStalled(false)
        try await stopping.value
        #expect(agent.ring.statistics().retainedFrames == 0)
        try await proxy.stop()
        try await collector.stop()
        #expect(try Harness.storedRecords(in: collector.dataDirectory).count == total)
    }
}
