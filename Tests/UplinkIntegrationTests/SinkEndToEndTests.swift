import Foundation
import Testing
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkSources
import UplinkTestSupport

/// Agents → collector → the stores people query: VictoriaMetrics and ClickHouse started from their Debian
/// binaries on free loopback ports (skipped, with a message, only when a binary is absent).
@Suite("Sinks end to end", .serialized, .timeLimit(.minutes(8)))
struct SinkEndToEndTests {
    /// A collector with the write-ahead log and `sinks`, running in this process.
    static func collector(_ directory: String, sinks: [SinkConfiguration]) async throws -> InProcessCollector {
        var configuration = CollectorConfiguration()
        configuration.port = 0
        configuration.dataDirectory = directory
        configuration.sinks = sinks
        configuration.log = CollectorLogSettings(segmentBytes: 256 << 10)
        return try await InProcessCollector(configuration: configuration)
    }

    /// The Prometheus series key (`__name__=…,agent=…,…` sorted) of a stored metric line, written independently of
    /// the sink's own mapping: these metric names, units and tag keys need only the `.` → `_` rule.
    static func seriesKey(_ object: [String: Any]) -> String {
        let name = (object["metric"] as! String).replacingOccurrences(of: ".", with: "_")
        let unit = object["unit"] as? String ?? ""
        var labels = [
            "__name__": unit.isEmpty || name.hasSuffix("_" + unit) ? name : name + "_" + unit,
            "agent": object["agent"] as! String, "source": object["src"] as! String,
        ]
        for (key, value) in object["tags"] as? [String: String] ?? [:] { labels[key] = value }
        return labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }

    @Test("Agent (cpu, memory, generator) → collector → VictoriaMetrics: every sample, value and timestamp, as the agent produced it")
    func agentToVictoriaMetrics() async throws {
        guard TestVictoriaMetrics.isAvailable else { return print(TestVictoriaMetrics.missingMessage) }
        let directory = try Harness.temporaryDirectory("sink-vm")
        let store = try await TestVictoriaMetrics(directory: directory + "/vm")
        let collector = try await Self.collector(directory + "/collector", sinks: [
            SinkConfiguration(name: "vm", kind: VictoriaMetricsSinkConfig(url: store.url), batchLinger: .milliseconds(50)),
            SinkConfiguration(
                name: "file", kind: JSONLSinkConfig(path: directory + "/agent-records.jsonl"), batchLinger: .milliseconds(50)),
        ])
        let agent = RunningAgent(url: collector.url, sources: [
            .init(name: "cpu", config: SourceConfig(CPUConfig(interval: .milliseconds(100)))),
            .init(name: "memory", config: SourceConfig(MemoryConfig(interval: .milliseconds(100)))),
            .generator(rate: 500, count: 1000),
        ])
        #expect(await eventually(timeout: .seconds(60)) { agent.ring.statistics().nextToWrite > 1500 })
        try await agent.stop()
        let appended = agent.ring.statistics().nextToWrite - 1
        #expect(await eventually(timeout: .seconds(60)) {
            collector.collector.sinkStatistics().allSatisfy { $0.recordsForwarded == appended }
        })
        try await collector.stop()

        // What the agent produced, as the collector logged it (the jsonl sink writes the log's lines unchanged).
        var expected: [String: [Int64: Double]] = [:]
        for line in try String(contentsOfFile: directory + "/agent-records.jsonl", encoding: .utf8).split(separator: "\n") {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            guard object["metric"] != nil else { continue }
            let timestamp = (object["ts"] as! NSNumber).int64Value / 1_000_000
            expected[Self.seriesKey(object), default: [:]][timestamp] = (object["value"] as! NSNumber).doubleValue
        }
        let expectedCount = expected.values.map(\.count).reduce(0, +)
        #expect(expectedCount > 100, "the agent produced metric samples")
        var stored: [String: [Int64: Double]] = [:]
        _ = try await eventually(timeout: .seconds(30)) {
            stored = [:]
            for series in try store.export() {
                let metric = series["metric"] as! [String: String]
                let key = metric.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
                for (value, timestamp) in zip(series["values"] as! [NSNumber], series["timestamps"] as! [NSNumber]) {
                    stored[key, default: [:]][timestamp.int64Value] = value.doubleValue
                }
            }
            return stored.values.map(\.count).reduce(0, +) >= expectedCount
        }
        #expect(Set(stored.keys) == Set(expected.keys))
        var mismatches: [String] = []
        for (key, samples) in expected {
            for (timestamp, value) in samples {
                // VictoriaMetrics keeps 12 significant decimal digits (docs/architecture.md).
                let got: Double? = stored[key]?[timestamp]
                if let got, abs(got - value) <= abs(value) * 1e-11 { continue }
                let text = got.map { "\($0)" } ?? "missing"
                mismatches.append("\(key) @ \(timestamp): \(value) vs \(text)")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.count) samples differ: \(mismatches.prefix(5))")
        #expect(stored.values.map(\.count).reduce(0, +) == expectedCount, "no sample beyond what the agent produced")
    }

    @Test("Tail source → collector → ClickHouse: every line exactly once after FINAL, in order per file")
    func tailToClickHouse() async throws {
        guard TestClickHouse.isAvailable else { return print(TestClickHouse.missingMessage) }
        let directory = try Harness.temporaryDirectory("sink-ch")
        let store = try await TestClickHouse(directory: directory + "/clickhouse")
        let collector = try await Self.collector(directory + "/collector", sinks: [
            SinkConfiguration(
                name: "ch",
                kind: ClickHouseSinkConfig(url: store.url, table: "logs", user: "default", password: TestClickHouse.password),
                batchMaxBytes: 64 << 10, batchLinger: .milliseconds(50))
        ])
        let files = [directory + "/a.log", directory + "/b.log"]
        let descriptors = files.map(TailEndToEndTests.openForAppend)
        defer { descriptors.forEach { close($0) } }
        let perFile = 3000
        var counters = [0, 100_000]
        let agent = RunningAgent(url: collector.url, sources: [TailEndToEndTests.tailSource(files)])
        for _ in 0..<30 {
            for index in files.indices {
                TailEndToEndTests.append(descriptors[index], TailEndToEndTests.lines(perFile / 30, from: &counters[index]))
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(await eventually(timeout: .seconds(60)) {
            collector.collector.sinkStatistics()[0].recordsForwarded == UInt64(2 * perFile)
        })
        try await agent.stop()
        try await collector.stop()

        let rows = try store.query(
            "SELECT message, field_values[indexOf(field_keys, 'path')] AS path FROM logs FINAL ORDER BY agent, epoch, seq FORMAT TabSeparated"
        ).split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        #expect(rows.count == 2 * perFile)
        for (index, file) in files.enumerated() {
            let numbers = rows.filter { $0.count == 2 && $0[1] == file }.compactMap { Int($0[0].dropFirst(2).prefix { $0 != " " }) }
            let first = index * 100_000
            #expect(numbers == Array(first..<(first + perFile)), "\(file): every line once, in order")
        }
        #expect(try store.query("SELECT count() FROM logs FINAL") == "\(2 * perFile)\n")
    }
}
