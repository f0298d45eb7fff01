import Foundation
import Testing
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkTestSupport

/// docs/deploy.md, "Scaling out": collectors behind nginx, each agent pinned to one by a consistent hash of its id.
@Suite("Sinks: scale-out behind nginx", .serialized, .timeLimit(.minutes(8)))
struct SinkScaleOutTests {
    static func collectorConfiguration(port: Int, data: String, clickhouse: TestClickHouse) -> String {
        """
        collector:
          listen: 127.0.0.1:\(port)
          data_dir: \(data)
          sinks:
            - { name: ch, type: clickhouse, url: "\(clickhouse.url)", password: \(TestClickHouse.password), table: logs,
                batch_linger: 50ms, backoff: { initial: 10ms, max: 200ms } }
        """
    }

    /// The agents a collector has stored records of: the `agent` of every line of its log (`<data>/log/*.jsonl`).
    static func agents(in data: String) -> Set<String> {
        let segments = (try? FileManager.default.contentsOfDirectory(atPath: data + "/log")) ?? []
        var agents = Set<String>()
        for name in segments where name.hasSuffix(".jsonl") {
            let bytes = Array((try? Data(contentsOf: URL(fileURLWithPath: data + "/log/" + name))) ?? Data())
            for line in bytes.split(separator: UInt8(ascii: "\n")) {
                if let stream = line.withUnsafeBytes({ StoredLine.stream(of: $0) }) { agents.insert(stream.agent) }
            }
        }
        return agents
    }

    @Test("Two collectors behind nginx (hash $http_uplink_agent consistent), 20 agents, one collector killed: its agents move to the other and ClickHouse ends with every record once")
    func twoCollectorsOneKilled() async throws {
        try await CPUGate.exclusive {
            guard TestClickHouse.isAvailable else { return print(TestClickHouse.missingMessage) }
            guard FileManager.default.isExecutableFile(atPath: TestNginx.binary) else { return print("nginx is not installed; skipping") }
            let binary = try UplinkBinary.path()
            let directory = try Harness.temporaryDirectory("scale-out")
            let clickhouse = try await TestClickHouse(directory: directory + "/clickhouse")
            let ports = [try FreePort.pick(), try FreePort.pick()]
            let data = [directory + "/a", directory + "/b"]
            for index in 0..<2 {
                try Self.collectorConfiguration(port: ports[index], data: data[index], clickhouse: clickhouse)
                    .write(toFile: "\(directory)/c\(index).yaml", atomically: true, encoding: .utf8)
            }
            func start(_ index: Int) async throws -> CollectorProcess {
                let collector = try CollectorProcess(
                    binary: binary, configuration: "\(directory)/c\(index).yaml", port: ports[index], log: "\(directory)/c\(index).log")
                try await collector.waitUntilHealthy()
                return collector
            }
            var collectors = [try await start(0), try await start(1)]
            // deploy/nginx/uplink.conf's upstream and stream settings, in plain HTTP.
            let blocks = """
                upstream uplink_collectors {
                    hash $http_uplink_agent consistent;
                    server 127.0.0.1:\(ports[0]) max_fails=1 fail_timeout=30s;
                    server 127.0.0.1:\(ports[1]) max_fails=1 fail_timeout=30s;
                    keepalive 16;
                }
                server {
                    listen 127.0.0.1:@PORT@;
                    location /v1/stream {
                        proxy_pass http://uplink_collectors;
                        proxy_http_version 1.1;
                        proxy_set_header Connection "";
                        proxy_request_buffering off;
                        proxy_buffering off;
                        client_max_body_size 0;
                        client_body_timeout 120s;
                        send_timeout 120s;
                        proxy_read_timeout 1h;
                        proxy_send_timeout 1h;
                    }
                }
                """
            try await TestNginx.withNginx(.init(upstreamPort: ports[0], serverBlocks: blocks)) { nginx in
                let perAgent = Self.perAgent
                let agents = (0..<20).map { index in
                    RunningAgent(url: nginx.url, sources: [.generator(rate: 150, count: perAgent, recordBytes: 100)]) {
                        $0.agentID = "agent-\(index)"
                    }
                }
                // Both collectors have agents before one is killed.
                #expect(await eventually(timeout: .seconds(30)) {
                    !Self.agents(in: data[0]).isEmpty && !Self.agents(in: data[1]).isEmpty
                })
                let onFirst = Self.agents(in: data[0])
                #expect(onFirst.count < 20, "the hash spreads agents over both collectors")
                collectors[0].process.send(SIGKILL)
                await collectors[0].process.waitForExit(seconds: 10)
                for agent in agents {
                    #expect(await agent.waitUntilAllAcknowledged(records: perAgent, timeout: .seconds(180)))
                }
                // The killed collector's agents moved to the other one.
                #expect(onFirst.isSubset(of: Self.agents(in: data[1])))
                for agent in agents { try await agent.stop() }
            }
            // The killed collector comes back and forwards what its log still held (acknowledged, not yet delivered).
            collectors[0] = try await start(0)
            let settled = await eventually(timeout: .seconds(60)) {
                data.allSatisfy { directory in
                    let state = forwardingState(directory, sinks: ["ch"])
                    return state.end > 0 && state.cursors == [state.end]
                }
            }
            #expect(settled, "both collectors forwarded their whole log")
            for collector in collectors { await collector.terminate() }

            let total = 20 * Self.perAgent
            let counts = try clickhouse.query(
                "SELECT count(), uniqExact(agent, field_values[indexOf(field_keys, 'n')]) FROM logs FINAL FORMAT TabSeparated")
            #expect(counts == "\(total)\t\(total)\n", "every record of every agent once, after FINAL")
            let perAgentCounts = try clickhouse.query("SELECT agent, count() FROM logs FINAL GROUP BY agent ORDER BY agent FORMAT TabSeparated")
            #expect(perAgentCounts.split(separator: "\n").allSatisfy { $0.hasSuffix("\t\(Self.perAgent)") })
        }
    }

    static let perAgent = 3000
}
