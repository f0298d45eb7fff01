import Foundation
import NIOCore
import NIOHTTP1
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport
import UplinkWire

@Suite(.timeLimit(.minutes(3)))
struct CollectorRecoveryTests {
    @Test(arguments: [(true, false), (false, false), (true, true)])
    func aRestartedCollectorKeepsItsMarks(jsonl: Bool, fsync: Bool) async throws {
        try await withTemporaryDirectory { directory in
            var configuration = testConfiguration(directory, jsonl: jsonl)
            configuration.fsync = fsync
            let first = try await InProcessCollector(configuration: configuration, stdout: RecordingOutput())
            try await withClient { client in
                let connection = try await AgentConnection.open(client, port: first.port, agent: "r", epoch: 42)
                #expect(try await connection.nextAck() == .resume(0))
                connection.send(body(1...6))
                #expect(try await connection.nextAck() == .ack(6))
                connection.send(body(7...10))
                #expect(try await connection.nextAck() == .ack(10))
                // Still streaming when the collector shuts down: the response ends.
                async let stopped: Void = first.stop()
                let rest = await connection.readUntilEnd()
                try await stopped
                #expect(rest.isEmpty)
                connection.finishUpload()
            }
            try await withCollector(configuration) { collector, port in
                #expect(collector.statistics().marks == [StreamKey(agent: "r", epoch: 42): 10])
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "r", epoch: 42)
                    #expect(try await connection.nextAck() == .resume(10))
                    connection.send(body(8...12))
                    #expect(try await connection.nextAck() == .ack(12))
                    _ = try await connection.close()
                }
                #expect(collector.statistics().duplicatesDiscarded == 3)
            }
            if jsonl {
                #expect(try storedSequences(directory, agent: "r", epoch: 42) == Array(1...12))
            } else {
                #expect(!FileManager.default.fileExists(atPath: directory + "/records.jsonl"))
            }
            #expect(try readLines(directory + "/marks.log").last?.hasPrefix("r 42 12 ") == true)
        }
    }

    /// The state a `SIGKILL` can leave: records written but not ledgered, a torn record line, a torn ledger line.
    @Test func tornRecordsAndLedgerAreRecovered() async throws {
        try await withTemporaryDirectory { directory in
            let stored = handWrittenStoredLine
            let ledgered = stored("k", 1, 1) + stored("k", 1, 2) + stored("other", 5, 7)
            let unledgered = stored("k", 1, 3) + stored("k", 1, 4) + stored("new", 9, 1)
            let torn = String(stored("k", 1, 5).prefix(30))
            try (ledgered + unledgered + torn).write(toFile: directory + "/records.jsonl", atomically: false, encoding: .utf8)
            let ledger = "k 1 1 100\nk 1 2 \(ledgered.utf8.count)\nother 5 7 \(ledgered.utf8.count)\nk 1 3"
            try ledger.write(toFile: directory + "/marks.log", atomically: false, encoding: .utf8)

            try await withCollector(testConfiguration(directory)) { collector, port in
                #expect(collector.statistics().marks == [
                    StreamKey(agent: "k", epoch: 1): 4, StreamKey(agent: "other", epoch: 5): 7, StreamKey(agent: "new", epoch: 9): 1,
                ])
                // The torn line is gone; the ledger is compacted.
                let records = try String(contentsOfFile: directory + "/records.jsonl", encoding: .utf8)
                #expect(records == ledgered + unledgered)
                let size = (ledgered + unledgered).utf8.count
                #expect(try readLines(directory + "/marks.log") == ["k 1 4 \(size)", "new 9 1 \(size)", "other 5 7 \(size)"])
                #expect(!FileManager.default.fileExists(atPath: directory + "/marks.log.tmp"))
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "k", epoch: 1)
                    #expect(try await connection.nextAck() == .resume(4))
                    connection.send(body(3...6))
                    #expect(try await connection.nextAck() == .ack(6))
                    _ = try await connection.close()
                }
            }
            #expect(try storedSequences(directory, agent: "k", epoch: 1) == Array(1...6))
            #expect(try readLines(directory + "/marks.log").contains { $0.hasPrefix("k 1 6 ") })
        }
    }

    @Test func aLedgerAheadOfATruncatedRecordsFileIsTrusted() async throws {
        try await withTemporaryDirectory { directory in
            try "z 3 50 999999\n".write(toFile: directory + "/marks.log", atomically: false, encoding: .utf8)
            try await withCollector(testConfiguration(directory)) { collector, _ in
                #expect(collector.statistics().marks == [StreamKey(agent: "z", epoch: 3): 50])
            }
        }
    }

    @Test func aDataDirectoryThatCannotBeCreatedFailsRun() async throws {
        try await withTemporaryDirectory { directory in
            try "not a directory".write(toFile: directory + "/file", atomically: false, encoding: .utf8)
            let collector = Collector(configuration: testConfiguration(directory + "/file/sub"), logger: testLogger)
            async let listening = collector.waitUntilListening()
            await #expect(throws: CollectorError.self) { try await collector.run() }
            do {
                _ = try await listening
                Issue.record("waitUntilListening() returned a port")
            } catch {
                #expect(error is CollectorError)
            }
        }
    }
}
