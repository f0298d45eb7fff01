import AsyncHTTPClient
import Foundation
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport

/// A VictoriaMetrics for the duration of `body`, in `directory`; `body` is not run (and the test says why) when
/// the binary is absent.
func withVictoriaMetrics(_ directory: String, start: Bool = true, _ body: (TestVictoriaMetrics) async throws -> Void) async throws {
    guard TestVictoriaMetrics.isAvailable else {
        print(TestVictoriaMetrics.missingMessage)
        return
    }
    let store = try await TestVictoriaMetrics(directory: directory + "/vm", start: start)
    do {
        try await body(store)
        await store.stop()
    } catch {
        await store.stop()
        throw error
    }
}

/// The samples of an export, keyed by series name and labels, then timestamp.
func exportedSamples(_ store: TestVictoriaMetrics, _ selector: String = #"{__name__=~".+"}"#) throws -> [String: [Int64: Double]] {
    var samples: [String: [Int64: Double]] = [:]
    for series in try store.export(selector) {
        let metric = series["metric"] as! [String: String]
        let key = metric.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
        let values = series["values"] as! [NSNumber]
        let timestamps = series["timestamps"] as! [NSNumber]
        for (value, timestamp) in zip(values, timestamps) {
            #expect(samples[key, default: [:]][timestamp.int64Value] == nil, "sample twice: \(key) @ \(timestamp)")
            samples[key, default: [:]][timestamp.int64Value] = value.doubleValue
        }
    }
    return samples
}

@Suite("VictoriaMetrics sink", .serialized, .timeLimit(.minutes(3)))
struct VictoriaMetricsSinkTests {
    static let base: Int64 = 1_763_704_818_000_000_000

    /// Sample `n`: a mix of names, units and tags that the Prometheus mapping has to handle.
    static func record(_ sequence: UInt64) -> Record {
        let time = base + Int64(sequence) * 1_000_123_456
        switch sequence % 4 {
        case 0: return .metric("cpu.user", value: Double(sequence) / 3, unit: "percent", tags: [Tag("cpu", "total")], source: "cpu", timestamp: time)
        case 1: return .metric("memory.used", value: Double(sequence) * 1024, unit: "bytes", source: "memory", timestamp: time)
        case 2:
            return .metric(
                "9disk-io/read", value: -Double(sequence) * 1e-7, unit: "", tags: [Tag("agent", "spoof"), Tag("dev.name", "sda"), Tag("dev-name", "sdb")],
                source: "diskio", timestamp: time)
        default: return .log("a log line \(sequence)", source: "app", timestamp: time)
        }
    }

    /// The series key and value VictoriaMetrics must hold for record `n` (nil for logs).
    static func expected(_ sequence: UInt64, agent: String) -> (key: String, timestamp: Int64, value: Double)? {
        let timestamp = (base + Int64(sequence) * 1_000_123_456) / 1_000_000
        switch sequence % 4 {
        case 0: return ("__name__=cpu_user_percent,agent=\(agent),cpu=total,source=cpu", timestamp, Double(sequence) / 3)
        case 1: return ("__name__=memory_used_bytes,agent=\(agent),source=memory", timestamp, Double(sequence) * 1024)
        case 2:
            return ("__name__=_9disk_io_read,agent=\(agent),dev_name=sda,source=diskio,tag_agent=spoof,tag_dev_name=sdb", timestamp, -Double(sequence) * 1e-7)
        default: return nil
        }
    }

    @Test("Every metric sample arrives with its exact value and millisecond timestamp; names and labels follow Prometheus conventions")
    func everySample() async throws {
        try await withTemporaryDirectory { directory in
            try await withVictoriaMetrics(directory) { store in
                let configuration = sinkConfiguration(directory, sinks: [
                    SinkConfiguration(name: "vm", kind: VictoriaMetricsSinkConfig(url: store.url), batchMaxBytes: 8192, batchLinger: .milliseconds(20))
                ])
                let total: UInt64 = 2000
                try await withCollector(configuration) { collector, port in
                    try await withClient { client in
                        try await sendAcknowledged(client, port: port, agent: "vm-agent", 1...total, chunk: 100, record: Self.record)
                    }
                    #expect(await eventually(timeout: .seconds(60)) { collector.sinkStatistics()[0].recordsForwarded == total })
                }
                var expected: [String: [Int64: Double]] = [:]
                for sequence in 1...total {
                    if let (key, timestamp, value) = Self.expected(sequence, agent: "vm-agent") { expected[key, default: [:]][timestamp] = value }
                }
                var samples: [String: [Int64: Double]] = [:]
                _ = try await eventually(timeout: .seconds(30)) {
                    samples = try exportedSamples(store)
                    return samples.values.map(\.count).reduce(0, +) >= 1500
                }
                #expect(Set(samples.keys) == Set(expected.keys))
                for (key, series) in expected {
                    #expect(Set(samples[key, default: [:]].keys) == Set(series.keys), "timestamps of \(key)")
                    // VictoriaMetrics keeps 12 significant decimal digits of a value (docs/architecture.md).
                    let mismatched = series.filter { timestamp, value in
                        guard let stored = samples[key]?[timestamp] else { return true }
                        return abs(stored - value) > abs(value) * 1e-11
                    }
                    #expect(mismatched.isEmpty, "\(key): \(mismatched.count) values differ, e.g. \(mismatched.first.map { "\($0.value) vs \(samples[key]?[$0.key] ?? .nan)" } ?? "")")
                }
            }
        }
    }

    @Test("The store is down while agents stream, then comes up: acks never wait for it and every sample arrives")
    func storeDownThenUp() async throws {
        try await withTemporaryDirectory { directory in
            try await withVictoriaMetrics(directory, start: false) { store in
                let configuration = sinkConfiguration(directory, sinks: [
                    SinkConfiguration(name: "vm", kind: VictoriaMetricsSinkConfig(url: store.url), batchLinger: .milliseconds(20), backoff: quickBackoff)
                ])
                let total: UInt64 = 1200
                try await withCollector(configuration) { collector, port in
                    try await withClient { client in
                        try await sendAcknowledged(client, port: port, agent: "down", 1...600, record: Self.record)
                        #expect(await eventually { collector.sinkStatistics()[0].retries >= 3 })
                        try await store.start()
                        try await sendAcknowledged(client, port: port, agent: "down", 601...900, record: Self.record)
                        await store.stop()
                        try await sendAcknowledged(client, port: port, agent: "down", 901...total, record: Self.record)
                        try await store.start()
                    }
                    #expect(await eventually(timeout: .seconds(60)) { collector.sinkStatistics()[0].recordsForwarded >= total })
                    #expect(collector.sinkStatistics()[0].recordsDeadLettered == 0)
                    #expect(collector.sinkStatistics()[0].recordsLost == 0)
                }
                let expectedCount = (1...total).filter { Self.expected($0, agent: "down") != nil }.count
                var samples: [String: [Int64: Double]] = [:]
                _ = try await eventually(timeout: .seconds(30)) {
                    samples = try exportedSamples(store)
                    return samples.values.map(\.count).reduce(0, +) >= expectedCount
                }
                #expect(samples.values.map(\.count).reduce(0, +) == expectedCount)
            }
        }
    }
}
