import Foundation
import Testing
import UplinkAgent
import UplinkCore
import UplinkSources
import UplinkTestSupport

/// The stored lines of a jsonl sink, one per (agent, epoch, seq): the sink may append a batch twice after a crash.
func uniqueStoredLines(_ path: String) throws -> [String: [String: Any]] {
    var lines: [String: [String: Any]] = [:]
    for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n") {
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        lines["\(object["agent"]!)/\(object["epoch"]!)/\(object["seq"]!)"] = object
    }
    return lines
}

/// Cursor of each sink and the log's end, read from the collector's data directory.
func forwardingState(_ dataDirectory: String, sinks: [String]) -> (cursors: [Int64], end: Int64) {
    let cursors = sinks.map { name in
        Int64(((try? String(contentsOfFile: "\(dataDirectory)/cursors/\(name)", encoding: .utf8)) ?? "0").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }
    let segments = ((try? FileManager.default.contentsOfDirectory(atPath: dataDirectory + "/log")) ?? []).filter { $0.hasSuffix(".jsonl") }.sorted()
    guard let last = segments.last, let base = Int64(last.prefix(20)) else { return (cursors, 0) }
    let size = (try? FileManager.default.attributesOfItem(atPath: dataDirectory + "/log/" + last)[.size] as? NSNumber)?.int64Value ?? 0
    return (cursors, base + size)
}

@Suite("Sinks: collector killed while forwarding", .serialized, .timeLimit(.minutes(10)))
struct SinkKillTests {
    @Test("SIGKILL 20 times while forwarding to VictoriaMetrics and ClickHouse: every record arrives, none twice after dedup")
    func killTwentyTimes() async throws {
        try await CPUGate.exclusive {
            guard TestVictoriaMetrics.isAvailable, TestClickHouse.isAvailable else {
                return print(TestVictoriaMetrics.missingMessage + " / " + TestClickHouse.missingMessage)
            }
            let binary = try UplinkBinary.path()
            let directory = try Harness.temporaryDirectory("sink-kill")
            let victoria = try await TestVictoriaMetrics(directory: directory + "/vm")
            let clickhouse = try await TestClickHouse(directory: directory + "/clickhouse")
            let port = try FreePort.pick()
            let data = directory + "/collector"
            let configuration = directory + "/collector.yaml"
            try """
                collector:
                  listen: 127.0.0.1:\(port)
                  data_dir: \(data)
                  log: { segment_bytes: 256KiB }
                  sinks:
                    - { name: vm, type: victoriametrics, url: "\(victoria.url)", batch_linger: 20ms, batch_max_bytes: 64KiB,
                        backoff: { initial: 10ms, max: 200ms } }
                    - { name: ch, type: clickhouse, url: "\(clickhouse.url)", password: \(TestClickHouse.password), table: logs,
                        batch_linger: 20ms, batch_max_bytes: 64KiB, backoff: { initial: 10ms, max: 200ms } }
                    - { name: file, type: jsonl, path: \(directory)/forwarded.jsonl, batch_linger: 20ms, batch_max_bytes: 64KiB }
                """.write(toFile: configuration, atomically: true, encoding: .utf8)
            let sinks = ["vm", "ch", "file"]
            var collector = try CollectorProcess(binary: binary, configuration: configuration, port: port, log: directory + "/collector.log")
            try await collector.waitUntilHealthy()

            let agent = RunningAgent(url: "http://127.0.0.1:\(port)", sources: [
                .generator(rate: 2_000, count: 40_000, recordBytes: 120),
                .init(name: "cpu", config: SourceConfig(CPUConfig(interval: .milliseconds(50)))),
            ], bufferBytes: 32 << 20)
            for round in 0..<20 {
                // Kill only while records are being forwarded: the sinks' cursors must move on this process first.
                let before = forwardingState(data, sinks: sinks).cursors
                let forwarding = await eventually(timeout: .seconds(30)) {
                    zip(forwardingState(data, sinks: sinks).cursors, before).allSatisfy { $0 > $1 }
                }
                #expect(forwarding, "round \(round): the sinks did not move")
                await collector.kill()
                collector = try CollectorProcess(binary: binary, configuration: configuration, port: port, log: directory + "/collector.log")
                try await collector.waitUntilHealthy()
            }
            // The cpu source appends too: wait for the generator's last record, then for the ack of everything.
            let generated = await eventually(timeout: .seconds(180)) {
                agent.ring.statistics().sources.first { $0.name == "gen" }?.appended == 40_000
            }
            #expect(generated, "the generator appended its 40,000 records")
            let appended = Int(agent.ring.statistics().nextToWrite - 1)
            #expect(await agent.waitUntilAllAcknowledged(records: appended, timeout: .seconds(180)))
            try await agent.stop()
            let settled = await eventually(timeout: .seconds(60)) {
                let state = forwardingState(data, sinks: sinks)
                return state.end > 0 && state.cursors.allSatisfy { $0 == state.end }
            }
            #expect(settled, "the sinks caught up with the log")
            await collector.terminate()

            let records = try uniqueStoredLines(directory + "/forwarded.jsonl")
            let logs = records.values.filter { $0["log"] != nil }.count
            let metrics = records.values.filter { $0["metric"] != nil }.count
            #expect(logs == 40_000, "every generator record was logged once")
            #expect(UInt64(records.count) == agent.ring.statistics().nextToWrite - 1, "every record the agent numbered")

            let counts = try clickhouse.query("SELECT count(), uniqExact(agent, epoch, seq) FROM logs FINAL FORMAT TabSeparated")
            #expect(counts == "\(logs)\t\(logs)\n", "ClickHouse after FINAL: every log record once")

            var samples = 0
            var twice = 0
            _ = try await eventually(timeout: .seconds(30)) {
                samples = 0
                twice = 0
                for series in try victoria.export() {
                    let timestamps = series["timestamps"] as! [NSNumber]
                    samples += timestamps.count
                    twice += timestamps.count - Set(timestamps.map(\.int64Value)).count
                }
                return samples >= metrics
            }
            #expect(twice == 0, "no sample twice in VictoriaMetrics' export (-dedup.minScrapeInterval=1ms)")
            #expect(samples == metrics, "every metric sample in VictoriaMetrics")
        }
    }
}
