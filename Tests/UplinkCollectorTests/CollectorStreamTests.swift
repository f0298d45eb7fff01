import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport
import UplinkWire

@Suite(.timeLimit(.minutes(3)))
struct CollectorStreamTests {
    @Test func resumeComesFirstThenAcksAfterRecords() async throws {
        try await withTemporaryDirectory { directory in
            let output = RecordingOutput()
            try await withCollector(testConfiguration(directory), output: output) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "edge-1", epoch: 7)
                    #expect(connection.response.status == .ok)
                    #expect(connection.response.headers["Content-Type"].first == "application/x-ndjson")
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body(1...3))
                    #expect(try await connection.nextAck() == .ack(3))
                    connection.send(body(4...4))
                    #expect(try await connection.nextAck() == .ack(4))
                    // A record split across chunks is acknowledged once its line is complete.
                    let line = recordLine(5)
                    connection.send(ByteBufferAllocator().buffer(bytes: line[..<10]))
                    connection.send(ByteBufferAllocator().buffer(bytes: line[10...] + [UInt8(ascii: "\n")]))
                    #expect(try await connection.nextAck() == .ack(5))
                    #expect(try await connection.close() == [])
                }
                // Standard output is a sink: it prints once the records are in the log, after the acknowledgement.
                #expect(await eventually { output.lines.count == 5 })
                let statistics = collector.statistics()
                #expect(statistics.recordsStored == 5)
                #expect(statistics.marks == [StreamKey(agent: "edge-1", epoch: 7): 5])
                #expect(statistics.streamsAccepted == 1)
            }
            let stored = try storedRecords(directory)
            #expect(stored.map(\.sequence) == [1, 2, 3, 4, 5])
            #expect(stored.allSatisfy { $0.agent == "edge-1" && $0.epoch == 7 })
            // The stored line is the received line with agent and epoch spliced in front.
            let first = try readLines(directory + "/records.jsonl")[0]
            let received = String(decoding: recordLine(1), as: UTF8.self)
            #expect(first == #"{"agent":"edge-1","epoch":7,"# + received.dropFirst())
            #expect(output.lines.count == 5)
            #expect(output.lines.first == "2025-11-21T06:00:18.000000001Z edge-1 cpu cpu.user{cpu=total} 0.5 percent")
        }
    }

    @Test("an ack held back by the pacing is written before the response ends when the sender ends its body")
    func heldBackAckIsWrittenAtTheEnd() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = testConfiguration(directory)
            configuration.ackInterval = .seconds(3600)
            try await withCollector(configuration) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "edge-1", epoch: 7)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body(1...3))
                    #expect(try await connection.nextAck() == .ack(3), "the first ack is not held back")
                    connection.send(body(4...10))
                    #expect(await eventually { collector.statistics().recordsStored == 10 })
                    // The ack of 4...10 waits for the hour; ending the body ends the wait.
                    #expect(try await connection.close() == [.ack(10)])
                }
            }
        }
    }

    @Test func duplicatesAreDiscardedOnResend() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let first = try await AgentConnection.open(client, port: port, agent: "a", epoch: 1)
                    #expect(try await first.nextAck() == .resume(0))
                    first.send(body(1...5))
                    #expect(try await first.nextAck() == .ack(5))
                    _ = try await first.close()

                    let second = try await AgentConnection.open(client, port: port, agent: "a", epoch: 1)
                    #expect(try await second.nextAck() == .resume(5))
                    second.send(body(3...7))
                    #expect(try await second.nextAck() == .ack(7))
                    // Only duplicates: no ack, nothing stored.
                    second.send(body(6...7))
                    second.send(body(8...8))
                    #expect(try await second.nextAck() == .ack(8))
                    _ = try await second.close()
                }
                let statistics = collector.statistics()
                #expect(statistics.duplicatesDiscarded == 5)
                #expect(statistics.recordsStored == 8)
            }
            #expect(try storedSequences(directory, agent: "a", epoch: 1) == Array(1...8))
        }
    }

    @Test func epochsAreSeparateStreams() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let old = try await AgentConnection.open(client, port: port, agent: "a", epoch: 1)
                    #expect(try await old.nextAck() == .resume(0))
                    old.send(body(1...4))
                    #expect(try await old.nextAck() == .ack(4))
                    _ = try await old.close()
                    let new = try await AgentConnection.open(client, port: port, agent: "a", epoch: 2)
                    #expect(try await new.nextAck() == .resume(0))
                    new.send(body(1...2))
                    #expect(try await new.nextAck() == .ack(2))
                    _ = try await new.close()
                }
                #expect(collector.statistics().marks == [StreamKey(agent: "a", epoch: 1): 4, StreamKey(agent: "a", epoch: 2): 2])
            }
        }
    }

    @Test func gapsAreCountedAndAccepted() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "gappy", epoch: 3)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body([recordLine(1), recordLine(2), recordLine(5)]))
                    #expect(try await connection.nextAck() == .ack(5))
                    connection.send(body(10...10))
                    #expect(try await connection.nextAck() == .ack(10))
                    _ = try await connection.close()
                }
                let statistics = collector.statistics()
                #expect(statistics.gaps == 2)
                #expect(statistics.recordsMissing == 6)
                #expect(statistics.recordsStored == 4)
            }
            #expect(try storedSequences(directory, agent: "gappy", epoch: 3) == [1, 2, 5, 10])
        }
    }

    @Test func heartbeatsAreCounted() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "quiet", epoch: 1)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(#"{"heartbeat":1763704833000000000}"# + "\n")
                    connection.send(#"{"heartbeat":1763704848000000000}"# + "\r\n" + String(decoding: recordLine(1), as: UTF8.self) + "\n")
                    #expect(try await connection.nextAck() == .ack(1))
                    _ = try await connection.close()
                }
                #expect(collector.statistics().heartbeats == 2)
                #expect(collector.statistics().malformedLines == 0)
            }
        }
    }

    @Test func malformedLinesAreCountedAndRejectedWhileTheStreamGoesOn() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "messy", epoch: 9)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body([
                        recordLine(1), Array("this is not json\t\u{1}".utf8), Array(#"{"seq":2}"#.utf8), [0xFF, 0xFE],
                    ]))
                    #expect(try await connection.nextAck() == .ack(1))
                    connection.send(body(2...3))
                    #expect(try await connection.nextAck() == .ack(3))
                    _ = try await connection.close()
                }
                #expect(collector.statistics().malformedLines == 3)
                #expect(collector.statistics().recordsStored == 3)
            }
            #expect(try storedSequences(directory, agent: "messy", epoch: 9) == [1, 2, 3])
            let rejects = try readLines(directory + "/rejects.jsonl").map(jsonObject)
            #expect(rejects.count == 3)
            #expect(rejects.map { $0["code"] as? String } == ["invalid_json", "missing_key", "invalid_json"])
            #expect(rejects.allSatisfy { $0["agent"] as? String == "messy" && ($0["epoch"] as? NSNumber)?.intValue == 9 })
            #expect(rejects[0]["line"] as? String == "this is not json\t\u{1}")
            #expect(rejects[1]["line"] as? String == #"{"seq":2}"#)
            #expect((rejects[1]["message"] as? String)?.contains("ts") == true)
            #expect(rejects[2]["line"] as? String == "\u{FFFD}\u{FFFD}")
            #expect((rejects[0]["time"] as? String)?.hasSuffix("Z") == true)
        }
    }

    @Test func tooLongLinesAreCountedAndNotedWithTheirLength() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory, maxLineBytes: 300)) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "big", epoch: 1)
                    #expect(try await connection.nextAck() == .resume(0))
                    let long = recordLine(2, .log(String(repeating: "x", count: 5000), source: "app", timestamp: 1))
                    connection.send(body([recordLine(1)]))
                    #expect(try await connection.nextAck() == .ack(1))
                    // The long line arrives in pieces, then a good record.
                    for start in stride(from: 0, to: long.count, by: 700) {
                        connection.send(ByteBufferAllocator().buffer(bytes: long[start..<min(start + 700, long.count)]))
                    }
                    connection.send(body([[], recordLine(3)]))  // the newline ending the long line, then record 3
                    #expect(try await connection.nextAck() == .ack(3))
                    _ = try await connection.close()
                    #expect(collector.statistics().tooLongLines == 1)
                    let rejects = try readLines(directory + "/rejects.jsonl").map(jsonObject)
                    #expect(rejects.count == 1)
                    #expect(rejects.first?["code"] as? String == "too_long")
                    #expect((rejects.first?["length"] as? NSNumber)?.intValue == long.count)
                    #expect(rejects.first?["line"] == nil)
                }
            }
            #expect(try storedSequences(directory, agent: "big", epoch: 1) == [1, 3])
        }
    }

    @Test func aCutLastLineIsNotedWhenTheRequestEnds() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "cut", epoch: 1)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body(1...1))
                    #expect(try await connection.nextAck() == .ack(1))
                    connection.send(ByteBufferAllocator().buffer(bytes: recordLine(2).prefix(20)))
                    #expect(try await connection.close() == [])
                }
                #expect(collector.statistics().malformedLines == 1)
                #expect(collector.statistics().marks[StreamKey(agent: "cut", epoch: 1)] == 1)
            }
            let rejects = try readLines(directory + "/rejects.jsonl").map(jsonObject)
            #expect(rejects.count == 1)
            #expect(rejects.first?["code"] as? String == "truncated_line")
            #expect((rejects.first?["length"] as? NSNumber)?.intValue == 20)
        }
    }

    @Test func tokenIsRequiredWhenConfigured() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory, token: "s3cret")) { collector, port in
                try await withClient { client in
                    for token in [nil, "wrong", "s3cre", "s3crett"] as [String?] {
                        let connection = try await AgentConnection.open(client, port: port, agent: "a", epoch: 1, token: token)
                        #expect(connection.response.status == .unauthorized)
                        #expect(connection.response.headers["WWW-Authenticate"].first == "Bearer")
                        #expect(try await connection.readText().contains("token"))
                        connection.finishUpload()
                    }
                    let connection = try await AgentConnection.open(client, port: port, agent: "a", epoch: 1, token: "s3cret")
                    #expect(connection.response.status == .ok)
                    #expect(try await connection.nextAck() == .resume(0))
                    _ = try await connection.close()
                }
                #expect(collector.statistics().streamsRejected == 4)
            }
        }
    }

    @Test(arguments: [
        (nil, "1", nil, 400, "Uplink-Agent"), ("", "1", nil, 400, "Uplink-Agent"), ("has space", "1", nil, 400, "Uplink-Agent"),
        (String(repeating: "a", count: 129), "1", nil, 400, "Uplink-Agent"),
        ("a", nil, nil, 400, "Uplink-Epoch"), ("a", "", nil, 400, "Uplink-Epoch"), ("a", "-1", nil, 400, "Uplink-Epoch"),
        ("a", "0x10", nil, 400, "Uplink-Epoch"), ("a", "18446744073709551616", nil, 400, "Uplink-Epoch"),
        // Epochs are 1 to 2^63-1, written without leading zeros (docs/protocol.md, "Integer ranges").
        ("a", "0", nil, 400, "Uplink-Epoch"), ("a", "9223372036854775808", nil, 400, "Uplink-Epoch"),
        ("a", "18446744073709551615", nil, 400, "Uplink-Epoch"), ("a", "007", nil, 400, "Uplink-Epoch"),
        ("a", "+1", nil, 400, "Uplink-Epoch"), ("a", String(repeating: "9", count: 5000), nil, 400, "Uplink-Epoch"),
        ("a", "1", "2", 415, "Uplink-Protocol"), ("a", "1", "1.1", 415, "Uplink-Protocol"),
        (String(repeating: "a", count: 128), "9223372036854775807", "1", 200, ""),
        ("A.b_c:d-9", "1", nil, 200, ""),
    ] as [(String?, String?, String?, Int, String)])
    func headersAreChecked(agent: String?, epoch: String?, version: String?, status: Int, reason: String) async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { _, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(
                        client, port: port, agent: agent, epoch: epoch, headers: version.map { [("Uplink-Protocol", $0)] } ?? [])
                    #expect(Int(connection.response.status.code) == status)
                    if status == 200 {
                        #expect(try await connection.nextAck() == .resume(0))
                        _ = try await connection.close()
                    } else {
                        let text = try await connection.readText()
                        #expect(text.contains(reason), "\(text)")
                        #expect(connection.response.headers["Content-Type"].first?.hasPrefix("text/plain") == true)
                        connection.finishUpload()
                    }
                }
            }
        }
    }

    /// zstd and gzip are accepted (CollectorCompressionTests); a coding the collector lacks is not.
    @Test func unknownContentEncodingIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { _, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(
                        client, port: port, agent: "a", epoch: "1", headers: [("Content-Encoding", "br")])
                    #expect(connection.response.status == .unsupportedMediaType)
                    #expect(connection.response.headers["Accept-Encoding"].first == "zstd, gzip, identity")
                    connection.finishUpload()
                }
            }
        }
    }

    @Test func healthz() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { _, port in
                try await withClient { client in
                    let response = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .minutes(1))
                    #expect(response.status == .ok)
                    #expect(String(buffer: try await response.body.collect(upTo: 100)) == "ok")
                    let missing = try await client.execute(HTTPClientRequest(url: "http://127.0.0.1:\(port)/v2/stream"), timeout: .minutes(1))
                    #expect(missing.status == .notFound)
                }
            }
        }
    }

    @Test func stdoutSinkPrintsOneLinePerRecord() async throws {
        try await withTemporaryDirectory { directory in
            let output = RecordingOutput()
            try await withCollector(testConfiguration(directory), output: output) { _, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "edge-1", epoch: 1)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body([
                        recordLine(1, .metric("cpu.user", value: 12.5, unit: "percent", tags: [Tag("cpu", "total"), Tag("host", "a b")],
                                              source: "cpu", timestamp: 1_763_704_818_123_456_789)),
                        recordLine(2, .metric("temp", value: .nan, unit: "", source: "hwmon", timestamp: -1)),
                        recordLine(3, .metric("mem.free", value: 3, unit: "bytes", source: "mem", timestamp: 951_782_400_000_000_000)),
                        recordLine(4, .log("GET /index\n200\t\u{1b}[31m\\", fields: [Tag("path", "/var/log/app.log")], source: "app",
                                           timestamp: 0)),
                        recordLine(5, .log("plain", source: "app", timestamp: 4_107_542_400_000_000_000)),
                    ]))
                    #expect(try await connection.nextAck() == .ack(5))
                    _ = try await connection.close()
                }
                #expect(await eventually { output.lines.count == 5 })
            }
            #expect(output.lines == [
                "2025-11-21T06:00:18.123456789Z edge-1 cpu cpu.user{cpu=total,host=a b} 12.5 percent",
                "1969-12-31T23:59:59.999999999Z edge-1 hwmon temp NaN",
                "2000-02-29T00:00:00.000000000Z edge-1 mem mem.free 3 bytes",
                #"1970-01-01T00:00:00.000000000Z edge-1 app GET /index\n200\t\u{1b}[31m\\ {path=/var/log/app.log}"#,
                "2100-03-01T00:00:00.000000000Z edge-1 app plain",
            ])
        }
    }
}

@Suite(.timeLimit(.minutes(3)))
struct CollectorStorageFailureTests {
    /// records.jsonl on /dev/full: every write fails with ENOSPC. Nothing may be acknowledged, and the stream ends at
    /// once (the agent reconnects and sends again) instead of reading on into a storage that cannot take it.
    @Test func aFailingSinkEndsTheStreamWithoutAcknowledging() async throws {
        try await withTemporaryDirectory { directory in
            try FileManager.default.createSymbolicLink(atPath: directory + "/records.jsonl", withDestinationPath: "/dev/full")
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "full", epoch: 1)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body(1...3))
                    #expect(await connection.readUntilEnd() == [])
                    connection.finishUpload()
                }
                #expect(collector.statistics().recordsStored == 0)
                #expect(collector.statistics().marks[StreamKey(agent: "full", epoch: 1)] == nil)
            }
        }
    }
}
