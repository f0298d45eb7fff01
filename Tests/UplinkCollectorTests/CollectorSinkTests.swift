import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport

/// A configuration with the write-ahead log and `sinks`, small segments so that tests see them roll.
func sinkConfiguration(_ directory: String, sinks: [SinkConfiguration], segmentBytes: Int64 = 4096, retentionBytes: Int64 = 1 << 30)
    -> CollectorConfiguration
{
    var configuration = testConfiguration(directory)
    configuration.sinks = sinks
    configuration.log = CollectorLogSettings(segmentBytes: segmentBytes, retentionBytes: retentionBytes)
    return configuration
}

/// Fast retries, so a test waits milliseconds, not seconds, for a store that came back.
let quickBackoff = Backoff(initial: .milliseconds(10), multiplier: 2, maximum: .milliseconds(200))

/// Sends records `range` on one stream in chunks of `chunk`, waiting for each chunk's ack.
func sendAcknowledged(_ client: HTTPClient, port: Int, agent: String = "sink-agent", epoch: UInt64 = 7, _ range: ClosedRange<UInt64>, chunk: UInt64 = 50,
    record: (UInt64) -> Record? = { _ in nil }) async throws
{
    let connection = try await AgentConnection.open(client, port: port, agent: agent, epoch: epoch)
    var start = range.lowerBound
    while start <= range.upperBound {
        let end = min(start + chunk - 1, range.upperBound)
        connection.send(body((start...end).map { recordLine($0, record($0)) }))
        try await connection.waitForAck(end)
        start = end + 1
    }
    _ = try await connection.close()
}

func segmentFiles(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory + "/log")) ?? []).filter { $0.hasSuffix(".jsonl") }.sorted()
}

@Suite("Collector sinks: write-ahead log and forwarders", .serialized, .timeLimit(.minutes(3)))
struct CollectorSinkTests {
    @Test("Records go through the log to a jsonl and a stdout sink, each once and in order; forwarded segments are deleted")
    func jsonlAndStdout() async throws {
        try await withTemporaryDirectory { directory in
            let output = RecordingOutput()
            let configuration = sinkConfiguration(directory, sinks: [
                SinkConfiguration(name: "file", kind: JSONLSinkConfig(path: directory + "/out.jsonl"), batchMaxBytes: 4096, batchLinger: .zero),
                SinkConfiguration(name: "print", kind: StdoutSinkConfig(), batchLinger: .milliseconds(5)),
            ])
            try await withCollector(configuration, output: output) { collector, port in
                try await withClient { client in try await sendAcknowledged(client, port: port, 1...500) }
                #expect(await eventually { collector.sinkStatistics().allSatisfy { $0.recordsForwarded == 500 } })
                // Closed segments are deleted once both sinks passed them: only the active one stays.
                #expect(await eventually { segmentFiles(directory).count == 1 })
            }
            let lines = try readLines(directory + "/out.jsonl").map(jsonObject)
            #expect(lines.map { ($0["seq"] as? NSNumber)?.uint64Value } == (1...500).map { $0 })
            #expect(lines.allSatisfy { $0["agent"] as? String == "sink-agent" && ($0["epoch"] as? NSNumber)?.uint64Value == 7 })
            #expect(output.lines.count == 500)
            #expect(output.lines.first?.contains("sink-agent cpu cpu.user{cpu=total} 0.5 percent") == true)
            #expect(!FileManager.default.fileExists(atPath: directory + "/records.jsonl"), "without a jsonl sink there is no records.jsonl")
            let cursor = try String(contentsOfFile: directory + "/cursors/file", encoding: .utf8)
            let logEnd = segmentFiles(directory).last.flatMap { name in
                Int64(name.prefix(20)).map { $0 + Int64((try? FileManager.default.attributesOfItem(atPath: directory + "/log/" + name)[.size] as? NSNumber)??.int64Value ?? 0) }
            }
            #expect(Int64(cursor.trimmingCharacters(in: .newlines)) == logEnd, "the cursor is at the end of the log")
        }
    }

    @Test("A jsonl sink's file cut mid-line by a crash loses the torn line before anything is appended")
    func jsonlSinkCutsATornTail() async throws {
        try await withTemporaryDirectory { directory in
            let out = directory + "/out.jsonl"
            try (#"{"agent":"old","epoch":1,"seq":1}"# + "\n" + #"{"agent":"old","epoch":1,"se"#).write(toFile: out, atomically: true, encoding: .utf8)
            let configuration = sinkConfiguration(directory, sinks: [
                SinkConfiguration(name: "file", kind: JSONLSinkConfig(path: out), batchLinger: .zero)
            ])
            try await withCollector(configuration) { collector, port in
                try await withClient { client in try await sendAcknowledged(client, port: port, 1...3) }
                #expect(await eventually { collector.sinkStatistics().first?.recordsForwarded == 3 })
            }
            let lines = try readLines(out)
            #expect(lines.count == 4)
            #expect(throws: Never.self) { try lines.map(jsonObject) }
            #expect(lines.first == #"{"agent":"old","epoch":1,"seq":1}"#)
        }
    }

    @Test("After a restart the marks come from the log and each sink resumes at its cursor: nothing twice, nothing lost")
    func restartResumes() async throws {
        try await withTemporaryDirectory { directory in
            let configuration = sinkConfiguration(directory, sinks: [
                SinkConfiguration(name: "file", kind: JSONLSinkConfig(path: directory + "/out.jsonl"), batchMaxBytes: 2048, batchLinger: .zero)
            ])
            try await withCollector(configuration) { collector, port in
                try await withClient { client in try await sendAcknowledged(client, port: port, 1...120) }
                #expect(await eventually { collector.sinkStatistics().first?.recordsForwarded == 120 })
            }
            try await withCollector(configuration) { collector, port in
                #expect(collector.statistics().marks[StreamKey(agent: "sink-agent", epoch: 7)] == 120)
                // An agent that did not see the last acks sends 101...120 again: they are discarded, not forwarded.
                try await withClient { client in try await sendAcknowledged(client, port: port, 101...300) }
                #expect(await eventually { collector.sinkStatistics().first?.recordsForwarded == 180 })
                #expect(collector.statistics().resentDiscarded + collector.statistics().duplicatesDiscarded == 20)
            }
            let sequences = try readLines(directory + "/out.jsonl").map { try #require((jsonObject($0)["seq"] as? NSNumber)?.uint64Value) }
            #expect(sequences == Array(1...300))
        }
    }

    @Test("A store answering 503 is retried until it accepts; a 400 sends the batch to the dead-letter file and forwarding goes on")
    func retryAndDeadLetter() async throws {
        try await withTemporaryDirectory { directory in
            let server = ScriptedHTTPServer()
            let serverPort = try await server.start()
            defer { Task { await server.stop() } }
            server.respond(503)
            let configuration = sinkConfiguration(directory, sinks: [
                SinkConfiguration(
                    name: "store",
                    kind: HTTPSinkConfig(url: "http://127.0.0.1:\(serverPort)/ingest", headers: [SinkHeader(name: "X-Test", value: "1")]),
                    batchMaxBytes: 1 << 20, batchLinger: .zero, backoff: quickBackoff)
            ])
            try await withCollector(configuration) { collector, port in
                try await withClient { client in
                    // Acks do not wait for the store.
                    try await sendAcknowledged(client, port: port, 1...100)
                    #expect(await eventually { (collector.sinkStatistics().first?.retries ?? 0) >= 3 })
                    #expect(collector.sinkStatistics().first?.recordsForwarded == 0)
                    server.respond(200)
                    #expect(await eventually { collector.sinkStatistics().first?.recordsForwarded == 100 })
                    server.respond(400)
                    try await sendAcknowledged(client, port: port, agent: "other", 1...10)
                    #expect(await eventually { collector.sinkStatistics().first?.recordsDeadLettered == 10 })
                    server.respond(200)
                    try await sendAcknowledged(client, port: port, agent: "third", 1...5)
                    #expect(await eventually { collector.sinkStatistics().first?.recordsForwarded == 105 })
                }
            }
            let delivered = server.acceptedBodies.flatMap { String(decoding: $0, as: UTF8.self).split(separator: "\n") }
            let keys = try delivered.map { line -> String in
                let object = try jsonObject(String(line))
                return "\(object["agent"]!)/\((object["seq"] as! NSNumber).intValue)"
            }
            #expect(keys == (1...100).map { "sink-agent/\($0)" } + (1...5).map { "third/\($0)" })
            let dead = try readLines(directory + "/dead-letter/store.jsonl").map(jsonObject)
            #expect(dead.map { $0["agent"] as? String } == Array(repeating: "other", count: 10))
        }
    }

    @Test("compression: gzip sends each batch with Content-Encoding: gzip, and gunzip gives back exactly the stored lines; none sends them as they are")
    func gzipBodies() async throws {
        try await withTemporaryDirectory { directory in
            let zipped = ScriptedHTTPServer()
            let plain = ScriptedHTTPServer()
            let zippedPort = try await zipped.start()
            let plainPort = try await plain.start()
            defer { Task { await zipped.stop(); await plain.stop() } }
            let configuration = sinkConfiguration(directory, sinks: [
                SinkConfiguration(
                    name: "zipped", kind: HTTPSinkConfig(url: "http://127.0.0.1:\(zippedPort)/", compression: .gzip),
                    batchMaxBytes: 64 << 10, batchLinger: .milliseconds(5)),
                SinkConfiguration(
                    name: "plain", kind: HTTPSinkConfig(url: "http://127.0.0.1:\(plainPort)/"), batchMaxBytes: 64 << 10,
                    batchLinger: .milliseconds(5)),
                SinkConfiguration(name: "file", kind: JSONLSinkConfig(path: directory + "/out.jsonl"), batchLinger: .zero),
            ], segmentBytes: 1 << 20)
            try await withCollector(configuration) { collector, port in
                try await withClient { client in try await sendAcknowledged(client, port: port, 1...3000, chunk: 500) }
                #expect(await eventually { collector.sinkStatistics().allSatisfy { $0.recordsForwarded == 3000 } })
            }
            let stored = try String(contentsOfFile: directory + "/out.jsonl", encoding: .utf8)
            #expect(zipped.acceptedEncodings.allSatisfy { $0 == "gzip" } && !zipped.acceptedEncodings.isEmpty)
            #expect(plain.acceptedEncodings.allSatisfy { $0 == nil })
            #expect(String(decoding: plain.acceptedBodies.joined(), as: UTF8.self) == stored)
            var unzipped: [UInt8] = []
            for (index, body) in zipped.acceptedBodies.enumerated() {
                let path = directory + "/body-\(index).gz"
                #expect(FileManager.default.createFile(atPath: path, contents: Data(body)))
                unzipped += try await gunzip(path)
            }
            #expect(String(decoding: unzipped, as: UTF8.self) == stored, "gzip -dc gives back the stored lines")
            let sent = zipped.acceptedBodies.reduce(0) { $0 + $1.count }
            #expect(sent * 4 < stored.utf8.count, "gzip shrinks repetitive JSON lines at least fourfold (\(sent) of \(stored.utf8.count) bytes)")
        }
    }

    @Test("victoriametrics: a cluster's vminsert URL with its tenant gets <url>/api/v1/import, gzipped by default")
    func victoriaMetricsClusterPath() async throws {
        try await withTemporaryDirectory { directory in
            let server = ScriptedHTTPServer()
            let serverPort = try await server.start()
            defer { Task { await server.stop() } }
            let configuration = sinkConfiguration(directory, sinks: [
                SinkConfiguration(
                    name: "vm", kind: VictoriaMetricsSinkConfig(url: "http://127.0.0.1:\(serverPort)/insert/42/prometheus/"),
                    batchLinger: .milliseconds(5))
            ])
            try await withCollector(configuration) { collector, port in
                try await withClient { client in try await sendAcknowledged(client, port: port, 1...20) }
                #expect(await eventually { collector.sinkStatistics().first?.recordsForwarded == 20 })
            }
            #expect(!server.acceptedPaths.isEmpty)
            #expect(server.acceptedPaths.allSatisfy { $0 == "/insert/42/prometheus/api/v1/import" }, "\(server.acceptedPaths)")
            #expect(server.acceptedEncodings.allSatisfy { $0 == "gzip" })
            var samples = 0
            for (index, body) in server.acceptedBodies.enumerated() {
                let path = directory + "/vm-\(index).gz"
                #expect(FileManager.default.createFile(atPath: path, contents: Data(body)))
                samples += String(decoding: try await gunzip(path), as: UTF8.self).split(separator: "\n").count
            }
            #expect(samples == 20, "one JSON line per metric sample")
        }
    }

    /// The real gzip tool's reading of a file.
    private func gunzip(_ path: String) async throws -> [UInt8] {
        let done = try await SpawnedProcess.run(["/bin/gzip", "-dc", path])
        #expect(done.status == 0, "gzip -dc \(path): \(done.errorText)")
        return done.output
    }

    @Test("Retention smaller than an outage: the loss is counted, acks never stall, and forwarding resumes after it")
    func retentionSmallerThanOutage() async throws {
        try await withTemporaryDirectory { directory in
            let server = ScriptedHTTPServer()
            let serverPort = try await server.start()
            defer { Task { await server.stop() } }
            server.respond(503)
            let configuration = sinkConfiguration(
                directory,
                sinks: [
                    SinkConfiguration(
                        name: "store", kind: HTTPSinkConfig(url: "http://127.0.0.1:\(serverPort)/"), batchMaxBytes: 2048,
                        batchLinger: .zero, backoff: quickBackoff)
                ], segmentBytes: 4096, retentionBytes: 16384)
            let total: UInt64 = 2000
            try await withCollector(configuration) { collector, port in
                try await withClient { client in try await sendAcknowledged(client, port: port, 1...total) }
                #expect(await eventually { (collector.sinkStatistics().first?.recordsLost ?? 0) > 0 })
                server.respond(200)
                #expect(await eventually {
                    let statistics = collector.sinkStatistics()[0]
                    return statistics.cursor > 0 && segmentFiles(directory).count == 1
                        && server.acceptedBodies.flatMap { $0.split(separator: UInt8(ascii: "\n")) }.last.map {
                            String(decoding: $0, as: UTF8.self).contains(#""seq":\#(total),"#)
                        } == true
                })
                let statistics = collector.sinkStatistics()[0]
                let delivered = try server.acceptedBodies.flatMap { $0.split(separator: UInt8(ascii: "\n")) }.map {
                    try #require((jsonObject(String(decoding: $0, as: UTF8.self))["seq"] as? NSNumber)?.uint64Value)
                }
                #expect(delivered == delivered.sorted() && Set(delivered).count == delivered.count, "in order, no duplicates")
                #expect(UInt64(delivered.count) + statistics.recordsLost >= total, "every record delivered or counted lost")
                #expect(statistics.recordsLost < total)
                // The collector itself is unaffected: it still stores and acknowledges.
                #expect(collector.statistics().recordsStored == total)
            }
        }
    }
}
