import Foundation
import Testing
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkTestSupport
import UplinkTransport
import UplinkWire

/// A real agent and a real collector over loopback with a compressed stream: exactly-once delivery, the `415`
/// fallback to an uncompressed body, and reconnects that restart the compressor.
@Suite("Compressed streams end to end", .serialized, .timeLimit(.minutes(4)))
struct CompressionEndToEndTests {
    static func checkExactlyOnce(_ collector: InProcessCollector, total: Int) throws {
        let stored = try Harness.storedRecords(in: collector.dataDirectory)
        #expect(stored.count == total)
        #expect(Set(stored.map(\.sequence)).count == stored.count, "a sequence number was stored twice")
        #expect(Harness.exactlyOnceProblem(stored.compactMap { Harness.generatorCounter($0.record) }, total: total) == nil)
    }

    @Test("Default settings: the stream is zstd, fewer bytes go on the wire than the lines hold, every record once")
    func defaultIsZstd() async throws {
        let collector = try await InProcessCollector(name: "compress-default")
        let total = 3_000
        let agent = RunningAgent(url: collector.url, sources: [.generator(rate: 3_000, count: total)])
        #expect(await agent.waitUntilAllAcknowledged(records: total, timeout: .seconds(60)))
        try await agent.stop()
        try await collector.stop()
        let statistics = agent.uplink.statistics()
        #expect(statistics.compression == .zstd)
        #expect(statistics.compressionFallbacks == 0)
        #expect(statistics.bytesWritten * 2 < statistics.lineBytesWritten, "\(statistics.bytesWritten) of \(statistics.lineBytesWritten)")
        #expect(collector.collector.statistics().corruptBodies == 0)
        try Self.checkExactlyOnce(collector, total: total)
    }

    @Test("A collector with zstd disabled answers 415: the agent falls back to none, says so once, and every record arrives once")
    func fallbackAfter415() async throws {
        let collector = try await InProcessCollector(name: "compress-415") { $0.acceptEncodings = [.gzip] }
        let total = 2_000
        var configuration = UplinkConfiguration(url: collector.url, agentID: "fallback-agent")
        configuration.compression = .zstd
        let agent = RunningAgent(configuration, sources: [.generator(rate: 2_000, count: total)])
        #expect(await agent.waitUntilAllAcknowledged(records: total, timeout: .seconds(60)))
        // A cut stream reconnects uncompressed: the fallback holds for the uplink's life and is not logged again.
        try await agent.stop()
        try await collector.stop()

        let statistics = agent.uplink.statistics()
        #expect(statistics.compression == WireCompression.none)
        #expect(statistics.compressionFallbacks == 1)
        #expect(statistics.lastFailure == .encodingRefused(.zstd))
        #expect(statistics.bytesWritten == statistics.lineBytesWritten)
        #expect(collector.collector.statistics().streamsRejected == 1)
        let fallbackLines = agent.log.entries(containing: "does not accept Content-Encoding zstd")
        #expect(fallbackLines.count == 1, "\(fallbackLines)")
        #expect(fallbackLines.first?.level == .warning)
        #expect(!agent.log.contains("collector rejected the stream"))
        try Self.checkExactlyOnce(collector, total: total)
    }

    @Test("Reconnects mid-stream with compression: a fresh compressor per stream, nothing lost or duplicated", arguments: [WireCompression.zstd, .gzip])
    func reconnectMidStream(_ encoding: WireCompression) async throws {
        try await CPUGate.exclusive {
            let collector = try await InProcessCollector(name: "compress-reconnect")
            let proxy = FaultProxy(upstreamPort: collector.port)
            try await proxy.start()
            let total = 12_000
            let agent = RunningAgent(
                url: "http://127.0.0.1:\(proxy.port)", sources: [.generator(rate: 3_000, count: total)]
            ) { uplink in
                uplink.compression = encoding
                uplink.stallTimeout = .seconds(2)
            }
            func acknowledged() -> UInt64 { agent.ring.statistics().acknowledged }
            #expect(await eventually(timeout: .seconds(20)) { acknowledged() > 1_000 })
            proxy.resetAllConnections()
            #expect(await eventually(timeout: .seconds(20)) { agent.uplink.statistics().failures >= 1 })
            let afterReset = acknowledged()
            #expect(await eventually(timeout: .seconds(20)) { acknowledged() > afterReset + 1_000 })
            proxy.cutAllConnections()
            #expect(await eventually(timeout: .seconds(20)) { agent.uplink.statistics().failures >= 2 })

            #expect(await agent.waitUntilAllAcknowledged(records: total, timeout: .seconds(60)))
            try await agent.stop()
            try await proxy.stop()
            try await collector.stop()

            let statistics = agent.uplink.statistics()
            #expect(statistics.streamsOpened >= 3)
            #expect(statistics.compression == encoding)
            let counts = collector.collector.statistics()
            #expect(counts.corruptBodies == 0 && counts.decompressionBombs == 0 && counts.malformedLines == 0)
            try Self.checkExactlyOnce(collector, total: total)
        }
    }
}
