import Foundation
import NIOCore
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport

/// A data directory written by collectors before the one record path (records.jsonl written directly, or the
/// `log/` of `collector.sinks`) keeps working: marks, resume and de-duplication carry over, nothing stored is lost
/// or stored twice, and standard output does not print the old records again.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct CollectorUpgradeTests {
    private func stored(_ agent: String, _ epoch: UInt64, _ sequence: UInt64) -> String {
        handWrittenStoredLine(agent, epoch, sequence)
    }

    /// The sequence a stdout line printed for `recordLine(sequence)`: its timestamp's last digits.
    private func printedSequences(_ output: RecordingOutput) -> [Int] {
        output.lines.compactMap { line in
            guard let time = line.split(separator: " ").first, time.hasPrefix("2025-11-21T06:00:18.") else { return nil }
            return Int(time.dropFirst(20).dropLast())
        }
    }

    @Test("Without sinks: records.jsonl and marks.log of the old layout, torn at the end, are the log and its ledger")
    func recordsFileLayout() async throws {
        try await withTemporaryDirectory { directory in
            let ledgered = stored("u", 3, 1) + stored("u", 3, 2) + stored("u", 3, 3) + stored("w", 1, 40)
            let unledgered = stored("u", 3, 4) + stored("u", 3, 5)
            let torn = String(stored("u", 3, 6).prefix(41))
            try (ledgered + unledgered + torn).write(toFile: directory + "/records.jsonl", atomically: false, encoding: .utf8)
            // The old ledger: its size column is the length of records.jsonl; a torn last line.
            try "u 3 2 100\nu 3 3 \(ledgered.utf8.count)\nw 1 40 \(ledgered.utf8.count)\nu 3 4 9".write(
                toFile: directory + "/marks.log", atomically: false, encoding: .utf8)

            let output = RecordingOutput()
            try await withCollector(testConfiguration(directory), output: output) { collector, port in
                #expect(collector.statistics().marks == [StreamKey(agent: "u", epoch: 3): 5, StreamKey(agent: "w", epoch: 1): 40])
                #expect(try String(contentsOfFile: directory + "/records.jsonl", encoding: .utf8) == ledgered + unledgered)
                try await withClient { client in
                    // The agent did not see the acks of 4 and 5 and sends them again, with more.
                    let connection = try await AgentConnection.open(client, port: port, agent: "u", epoch: 3)
                    #expect(try await connection.nextAck() == .resume(5))
                    connection.send(body(3...8))
                    #expect(try await connection.nextAck() == .ack(8))
                    _ = try await connection.close()
                }
                #expect(collector.statistics().duplicatesDiscarded == 3)
                // Standard output prints what arrived after the upgrade, not the records the old collector printed.
                #expect(await eventually { printedSequences(output) == [6, 7, 8] })
                // Its cursor reaches the end of records.jsonl (persisted after the print).
                #expect(await eventually {
                    let size = (try? FileManager.default.attributesOfItem(atPath: directory + "/records.jsonl")[.size] as? Int) ?? -1
                    return collector.sinkStatistics().first?.cursor == Int64(size)
                })
            }
            #expect(try storedSequences(directory, agent: "u", epoch: 3) == Array(1...8))
            #expect(try storedSequences(directory, agent: "w", epoch: 1) == [40])
            // records.jsonl is the log: no second copy of the records anywhere in the data directory.
            #expect(!FileManager.default.fileExists(atPath: directory + "/log"))
            let size = try #require(try FileManager.default.attributesOfItem(atPath: directory + "/records.jsonl")[.size] as? Int)
            #expect(try readLines(directory + "/marks.log").last == "u 3 8 \(size)")
            #expect(try String(contentsOfFile: directory + "/cursors/collector.stdout", encoding: .utf8) == "\(size)\n")

            // Another restart prints nothing again and stores nothing twice.
            let again = RecordingOutput()
            try await withCollector(testConfiguration(directory), output: again) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "u", epoch: 3)
                    #expect(try await connection.nextAck() == .resume(8))
                    connection.send(body(8...9))
                    #expect(try await connection.nextAck() == .ack(9))
                    _ = try await connection.close()
                }
                #expect(await eventually { printedSequences(again) == [9] })
                #expect(collector.sinkStatistics().map(\.name) == ["collector.stdout"])
            }
            #expect(try storedSequences(directory, agent: "u", epoch: 3) == Array(1...9))
        }
    }

    @Test("With sinks: the old log, ledger and cursor carry over; the sink gets every record once")
    func segmentedLogLayout() async throws {
        try await withTemporaryDirectory { directory in
            let out = directory + "/out.jsonl"
            let first = stored("s", 2, 1) + stored("s", 2, 2)
            let rest = stored("s", 2, 3) + stored("s", 2, 4)
            try FileManager.default.createDirectory(atPath: directory + "/log", withIntermediateDirectories: true)
            try (first + rest + String(stored("s", 2, 5).prefix(20))).write(
                toFile: directory + "/log/00000000000000000000.jsonl", atomically: false, encoding: .utf8)
            // Ledgered through 3; the sink delivered 1 and 2 (its file and its cursor say so).
            try "s 2 3 \((first + stored("s", 2, 3)).utf8.count)\n".write(toFile: directory + "/marks.log", atomically: false, encoding: .utf8)
            try FileManager.default.createDirectory(atPath: directory + "/cursors", withIntermediateDirectories: true)
            try "\(first.utf8.count)\n".write(toFile: directory + "/cursors/file", atomically: false, encoding: .utf8)
            try first.write(toFile: out, atomically: false, encoding: .utf8)

            let configuration = sinkConfiguration(directory, sinks: [
                SinkConfiguration(name: "file", kind: JSONLSinkConfig(path: out), batchLinger: .zero)
            ], segmentBytes: 1 << 20)
            try await withCollector(configuration) { collector, port in
                #expect(collector.statistics().marks == [StreamKey(agent: "s", epoch: 2): 4])
                #expect(await eventually { collector.sinkStatistics().first?.recordsForwarded == 2 })
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "s", epoch: 2)
                    #expect(try await connection.nextAck() == .resume(4))
                    connection.send(body(4...6))
                    #expect(try await connection.nextAck() == .ack(6))
                    _ = try await connection.close()
                }
                #expect(await eventually { collector.sinkStatistics().first?.recordsForwarded == 4 })
            }
            let sequences = try readLines(out).map { try #require((jsonObject($0)["seq"] as? NSNumber)?.uint64Value) }
            #expect(sequences == Array(1...6))
            #expect(!FileManager.default.fileExists(atPath: directory + "/records.jsonl"))
        }
    }

    @Test("Without jsonl, standard output reads the log under log/; a restart prints nothing twice")
    func stdoutWithoutRecordsFile() async throws {
        try await withTemporaryDirectory { directory in
            let configuration = testConfiguration(directory, jsonl: false)
            let output = RecordingOutput()
            try await withCollector(configuration, output: output) { _, port in
                try await withClient { client in try await sendAcknowledged(client, port: port, agent: "p", epoch: 1, 1...5) }
                #expect(await eventually { printedSequences(output) == [1, 2, 3, 4, 5] })
            }
            #expect(!FileManager.default.fileExists(atPath: directory + "/records.jsonl"))
            #expect(segmentFiles(directory).count == 1)
            let again = RecordingOutput()
            try await withCollector(configuration, output: again) { _, port in
                try await withClient { client in try await sendAcknowledged(client, port: port, agent: "p", epoch: 1, 6...7) }
                #expect(await eventually { printedSequences(again) == [6, 7] })
            }
        }
    }
}
