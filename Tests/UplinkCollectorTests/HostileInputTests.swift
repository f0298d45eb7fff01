import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport
import UplinkWire

/// What arrives from the network never crashes the collector: out-of-range numbers, huge numbers,
/// huge lines, invalid UTF-8 and random bytes are malformed lines, counted and set aside, while a well-behaved
/// agent streaming alongside loses nothing and `/healthz` keeps answering. Real collector, real loopback sockets.
@Suite(.timeLimit(.minutes(3)))
struct HostileInputTests {
    static func metricLine(seq: String, ts: String = "1", value: String = "1") -> [UInt8] {
        Array(#"{"seq":\#(seq),"ts":\#(ts),"src":"s","metric":"m","value":\#(value)}"#.utf8)
    }

    static func healthz(_ client: HTTPClient, port: Int) async throws -> String {
        let response = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(30))
        #expect(response.status == .ok)
        return String(buffer: try await response.body.collect(upTo: 1024))
    }

    /// The reported crash: a record with `seq` 2^64-1 on two streams made the missing-records count overflow, and
    /// one such record left a count that crashed on the next ordinary gap. Now 2^64-1 is a malformed line, the
    /// largest valid sequence makes a gap that fits, and the count saturates instead of trapping.
    @Test func sequencesAtTheTopOfTheRangeDoNotCrashTheCollector() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let top = String(UInt64.max)
                    for (index, agent) in ["top-1", "top-2"].enumerated() {
                        let connection = try await AgentConnection.open(client, port: port, agent: agent, epoch: 1)
                        #expect(try await connection.nextAck() == .resume(0))
                        connection.send(body([Self.metricLine(seq: top), recordLine(1)]))
                        #expect(try await connection.nextAck() == .ack(1))
                        _ = try await connection.close()
                        #expect(collector.statistics().malformedLines == UInt64(index + 1))
                    }
                    // Three streams jumping to 2^63-1: 3 × (2^63-2) missing records do not fit a UInt64.
                    for agent in ["max-1", "max-2", "max-3"] {
                        let connection = try await AgentConnection.open(client, port: port, agent: agent, epoch: 1)
                        #expect(try await connection.nextAck() == .resume(0))
                        let record = Record.metric("m", value: 1, unit: "", tags: [], source: "s", timestamp: 1)
                        connection.send(body([recordLine(WireIntegers.maximum, record)]))
                        #expect(try await connection.nextAck() == .ack(WireIntegers.maximum))
                        _ = try await connection.close()
                    }
                    #expect(collector.statistics().recordsMissing == UInt64.max)
                    // The next ordinary gap, from another agent: counted, the collector goes on.
                    let ordinary = try await AgentConnection.open(client, port: port, agent: "ordinary", epoch: 5)
                    #expect(try await ordinary.nextAck() == .resume(0))
                    ordinary.send(body([recordLine(1), recordLine(3)]))
                    #expect(try await ordinary.nextAck() == .ack(3))
                    _ = try await ordinary.close()
                    #expect(try await Self.healthz(client, port: port) == "ok")
                }
                let statistics = collector.statistics()
                #expect(statistics.gaps == 4)
                #expect(statistics.recordsMissing == UInt64.max)
                #expect(statistics.recordsStored == 7)
                #expect(statistics.marks[StreamKey(agent: "max-2", epoch: 1)] == WireIntegers.maximum)
            }
            #expect(try storedSequences(directory, agent: "ordinary", epoch: 5) == [1, 3])
            let rejects = try readLines(directory + "/rejects.jsonl").map(jsonObject)
            #expect(rejects.map { $0["code"] as? String } == ["invalid_value", "invalid_value"])
        }
    }

    /// Each hostile line alone: rejected with the expected code; the records around it are stored.
    @Test(arguments: [
        (String(UInt64.max), "invalid_value"), ("9223372036854775808", "invalid_value"), ("0", "invalid_value"),
        ("-1", "invalid_value"), ("1e3", "wrong_type"), ("007", "invalid_json"), ("5000 nines", "invalid_value"),
        ("-5000 nines", "invalid_value"),
    ])
    func outOfRangeSequencesAreMalformedLines(seq written: String, code: String) async throws {
        let nines = String(repeating: "9", count: 5000)
        let seq = written == "5000 nines" ? nines : written == "-5000 nines" ? "-" + nines : written
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "edge", epoch: 2)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body([recordLine(1), Self.metricLine(seq: seq), recordLine(2)]))
                    // (The body may arrive in more than one chunk, so there may be an ack for 1 first.)
                    try await connection.waitForAck(2)
                    _ = try await connection.close()
                }
                #expect(collector.statistics().malformedLines == 1)
                #expect(collector.statistics().recordsMissing == 0)
            }
            #expect(try storedSequences(directory, agent: "edge", epoch: 2) == [1, 2])
            let rejects = try readLines(directory + "/rejects.jsonl").map(jsonObject)
            #expect(rejects.map { $0["code"] as? String } == [code])
        }
    }

    /// A body of nothing but bad lines (here 30,000 empty lines and 30,000 bare words) is counted line by line but
    /// does not become a line on disk per bad line: each batch keeps its first `maximumRejectNotes` for rejects.jsonl.
    @Test func floodsOfBadLinesAreCountedNotAllWritten() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "flood", epoch: 1)
                    #expect(try await connection.nextAck() == .resume(0))
                    let flood = [UInt8](repeating: UInt8(ascii: "\n"), count: 30_000) + Array(String(repeating: "x\n", count: 30_000).utf8)
                    connection.send(ByteBuffer(bytes: flood))
                    connection.send(body([recordLine(1)]))
                    try await connection.waitForAck(1)
                    _ = try await connection.close()
                }
                #expect(collector.statistics().malformedLines == 60_000)
            }
            let rejects = try readLines(directory + "/rejects.jsonl")
            #expect(!rejects.isEmpty)
            #expect(rejects.count <= 6_000, "\(rejects.count) reject lines written for 60,000 bad lines")
            #expect(try storedSequences(directory, agent: "flood", epoch: 1) == [1])
        }
    }

    /// A hostile connection sends everything at once, in pieces, while a well-behaved agent streams: the agent
    /// loses nothing and `/healthz` answers between its chunks.
    @Test func aHostileStreamDoesNotDisturbAWellBehavedAgent() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let good = try await AgentConnection.open(client, port: port, agent: "good", epoch: 11)
                    #expect(try await good.nextAck() == .resume(0))
                    let hostile = try await AgentConnection.open(client, port: port, agent: "hostile", epoch: 12)
                    #expect(try await hostile.nextAck() == .resume(0))

                    var random = SeededBytes(seed: 1123)
                    let huge = String(repeating: "7", count: 5000)
                    let hostileLines: [[UInt8]] = [
                        Self.metricLine(seq: "0"), Self.metricLine(seq: "-1"), Self.metricLine(seq: "9223372036854775808"),
                        Self.metricLine(seq: String(UInt64.max)), Self.metricLine(seq: huge), Self.metricLine(seq: "1", ts: huge),
                        Array(#"{"seq":1,"ts":1,"src":"s","log":"x","origin":\#(huge),"offset":0}"#.utf8),
                        Array(#"{"seq":1,"ts":1,"src":"s","log":"x","origin":1,"offset":9223372036854775808}"#.utf8),
                        Array(#"{"heartbeat":\#(huge)}"#.utf8),
                        Array(#"{"seq":1,"ts":1,"src":"\#u{FF}"}"#.utf8) + [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xFF, 0xFE, 0xFD],
                    ]
                    let randomLines = (0..<50).map { _ in random.bytes(count: 1 + Int(random.next() % 300), excluding: 0x0A) }
                    let tenMiB = 10 << 20
                    let goodRecords: UInt64 = 400
                    var sent: UInt64 = 0
                    for round in 0..<20 {
                        // The hostile side: its share of the lines, a slice of the 10 MiB line, raw random bytes.
                        // (The 10 MiB line goes out in two halves, ending before round 6's lines.)
                        let share = hostileLines.count * round / 20..<hostileLines.count * (round + 1) / 20
                        if round == 6 { hostile.send(ByteBuffer(bytes: Array(repeating: UInt8(ascii: "y"), count: tenMiB / 2) + [0x0A])) }
                        hostile.send(body(Array(hostileLines[share]) + Array(randomLines[round * 2..<round * 2 + 2])))
                        if round == 5 { hostile.send(ByteBuffer(bytes: Array(repeating: UInt8(ascii: "x"), count: tenMiB / 2))) }
                        // The good side: 20 records, acknowledged before the next round.
                        good.send(body(sent + 1...sent + goodRecords / 20))
                        sent += goodRecords / 20
                        try await good.waitForAck(sent)
                        #expect(try await Self.healthz(client, port: port) == "ok")
                    }
                    // A valid record last: its ack means every hostile line before it was sorted.
                    hostile.send(body([recordLine(1)]))
                    #expect(try await hostile.nextAck() == .ack(1))
                    _ = try await hostile.close()
                    _ = try await good.close()
                }
                let statistics = collector.statistics()
                #expect(statistics.tooLongLines == 1)
                // Every hostile line and every random one (none of which is a JSON object with a record's keys).
                #expect(statistics.malformedLines == 12 + 40)
                #expect(statistics.recordsMissing == 0)
                #expect(statistics.marks[StreamKey(agent: "good", epoch: 11)] == 400)
            }
            #expect(try storedSequences(directory, agent: "good", epoch: 11) == Array(1...400))
        }
    }
}

/// Reproducible random bytes for hostile inputs.
struct SeededBytes {
    private var random: SplitMix64

    init(seed: UInt64) { random = SplitMix64(seed: seed) }

    mutating func next() -> UInt64 { random.next() }

    mutating func bytes(count: Int, excluding excluded: UInt8) -> [UInt8] {
        (0..<count).map { _ in
            let byte = UInt8(truncatingIfNeeded: next())
            return byte == excluded ? 0 : byte
        }
    }
}
