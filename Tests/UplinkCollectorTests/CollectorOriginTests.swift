import Foundation
import NIOCore
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport
import UplinkWire

/// Log lines carry their origin (file incarnation + end offset); a line sent again under a new epoch, as after an
/// agent crash between the collector's ack and the agent's checkpoint, is discarded, also across collector restarts.
@Suite(.timeLimit(.minutes(3)))
struct CollectorOriginTests {
    func logLine(_ sequence: UInt64, origin: UInt64, offset: UInt64) -> [UInt8] {
        recordLine(
            sequence,
            Record(
                timestamp: 1_763_704_818_000_000_000, source: "app",
                payload: .log(LogLine(message: "line ending at \(offset)", fields: [Tag("path", "/var/log/app.log")],
                    origin: RecordOrigin(id: origin, offset: offset)))))
    }

    @Test func linesSentAgainUnderANewEpochAreDiscardedButAcknowledged() async throws {
        try await withTemporaryDirectory { directory in
            let configuration = testConfiguration(directory)
            try await withCollector(configuration) { collector, port in
                try await withClient { client in
                    let first = try await AgentConnection.open(client, port: port, agent: "edge", epoch: 1)
                    #expect(try await first.nextAck() == .resume(0))
                    first.send(body([logLine(1, origin: 7, offset: 10), logLine(2, origin: 7, offset: 20), recordLine(3)]))
                    #expect(try await first.nextAck() == .ack(3))
                    _ = try await first.close()
                }
                try await withClient { client in
                    // The agent restarted (new epoch) from a checkpoint at offset 10: the line ending at 20 comes again.
                    let second = try await AgentConnection.open(client, port: port, agent: "edge", epoch: 2)
                    #expect(try await second.nextAck() == .resume(0))
                    second.send(body([logLine(1, origin: 7, offset: 20)]))
                    // Nothing new to store, yet the sequence is acknowledged so the agent can release it.
                    #expect(try await second.nextAck() == .ack(1))
                    second.send(body([logLine(2, origin: 7, offset: 30), logLine(3, origin: 8, offset: 5)]))
                    #expect(try await second.nextAck() == .ack(3))
                    _ = try await second.close()
                }
                let statistics = collector.statistics()
                #expect(statistics.resentDiscarded == 1)
                #expect(statistics.recordsStored == 5)
                #expect(statistics.marks == [StreamKey(agent: "edge", epoch: 1): 3, StreamKey(agent: "edge", epoch: 2): 3])
            }
            let offsets = try storedRecords(directory).compactMap { ($0.object["offset"] as? NSNumber)?.uint64Value }
            #expect(offsets == [10, 20, 30, 5])
        }
    }

    @Test func originMarksSurviveARestartFromTheLedgerAndFromTheRecordsFile() async throws {
        try await withTemporaryDirectory { directory in
            let configuration = testConfiguration(directory)
            try await withCollector(configuration) { _, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "edge", epoch: 1)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body([logLine(1, origin: 7, offset: 10), logLine(2, origin: 9, offset: 40)]))
                    #expect(try await connection.nextAck() == .ack(2))
                    _ = try await connection.close()
                }
            }
            #expect(try readLines(directory + "/marks.log").contains { $0.hasPrefix("edge/origin 7 10 ") })
            // A record written but not ledgered (a crash between the two writes) raises its origin's mark on recovery.
            let unledgered = #"{"agent":"edge","epoch":1,"#
                + String(decoding: logLine(3, origin: 7, offset: 25).dropFirst(), as: UTF8.self) + "\n"
            let handle = try #require(FileHandle(forWritingAtPath: directory + "/records.jsonl"))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(unledgered.utf8))
            try handle.close()

            try await withCollector(configuration) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "edge", epoch: 5)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(
                        body([
                            logLine(1, origin: 7, offset: 10), logLine(2, origin: 7, offset: 25),
                            logLine(3, origin: 9, offset: 40), logLine(4, origin: 7, offset: 35),
                        ]))
                    #expect(try await connection.nextAck() == .ack(4))
                    _ = try await connection.close()
                }
                #expect(collector.statistics().resentDiscarded == 3)
                #expect(collector.statistics().marks[StreamKey(agent: "edge", epoch: 5)] == 4)
            }
            let offsets = try storedRecords(directory).compactMap { ($0.object["offset"] as? NSNumber)?.uint64Value }
            #expect(offsets == [10, 40, 25, 35])
        }
    }
}
