import Foundation
import Testing
import UplinkAgent
import UplinkTestSupport

/// The agent's and the collector's endpoints (`/metrics`, `/readyz`, `/v1/status`) and `uplink status`, with the
/// real binary in subprocesses and a real Prometheus scraping them.
@Suite("Observability endpoints", .serialized, .timeLimit(.minutes(3)))
struct ObservabilityTests {
    /// A collector and two agents as subprocesses: `streaming` sends to the collector, `cutOff` to a port nobody
    /// listens on, with a 4 KiB buffer that has to drop.
    final class Fleet: @unchecked Sendable {
        let directory: String
        let collectorPort: Int
        let streamingPort: Int
        let cutOffPort: Int
        /// The cut-off agent's collector port, held bound (not listening) while the fleet lives: a port only picked
        /// free could be taken by another test's server meanwhile, and the agent would stream to it (CI, once).
        private let deadPort: PortReservation
        private var processes: [ChildProcess] = []

        /// `streamingBuffer`: the streaming agent's `buffer:` section (flow YAML), its default when nil.
        init(_ name: String, streamingBuffer: String? = nil) async throws {
            directory = try Harness.temporaryDirectory(name)
            collectorPort = try FreePort.pick()
            streamingPort = try FreePort.pick()
            cutOffPort = try FreePort.pick()
            deadPort = try FreePort.reserve()
            let binary = try UplinkBinary.path()
            try write("collector.yaml", """
                collector: { listen: 127.0.0.1:\(collectorPort), data_dir: \(directory)/collector, stdout: false }
                """)
            try write("streaming.yaml", """
                agent: { id: box-streaming, state_dir: \(directory)/streaming, metrics_listen: 127.0.0.1:\(streamingPort) }
                \(streamingBuffer.map { "buffer: \($0)" } ?? "")
                uplink: { url: "http://127.0.0.1:\(collectorPort)" }
                sources:
                  - { name: gen, type: generator, rate: 200, record_bytes: 100 }
                """)
            try write("cut-off.yaml", """
                agent: { id: box-cut-off, state_dir: \(directory)/cut-off, metrics_listen: 127.0.0.1:\(cutOffPort) }
                buffer: { max_bytes: 4KiB }
                uplink: { url: "http://127.0.0.1:\(deadPort.port)", backoff: { initial: 100ms, max: 1s } }
                sources:
                  - { name: gen, type: generator, rate: 500, record_bytes: 100 }
                """)
            processes.append(try ChildProcess(
                [binary, "collector", "--config", directory + "/collector.yaml"], outputPath: directory + "/collector.log"))
            processes.append(try ChildProcess(
                [binary, "run", "--config", directory + "/streaming.yaml"], outputPath: directory + "/streaming.log"))
            processes.append(try ChildProcess(
                [binary, "run", "--config", directory + "/cut-off.yaml"], outputPath: directory + "/cut-off.log"))
            for port in [collectorPort, streamingPort, cutOffPort] {
                _ = await LoopbackHTTP10.waitUntilOK(port: port, path: "/healthz")
            }
        }

        private func write(_ name: String, _ text: String) throws {
            try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8)
        }

        func log(_ name: String) -> String {
            (try? String(contentsOfFile: directory + "/\(name).log", encoding: .utf8)) ?? ""
        }

        /// SIGTERM to each process; releasing them right after kills (SIGKILL) and reaps any still running.
        func stop() {
            for process in processes.reversed() { process.send(SIGTERM) }
            processes = []
        }

        deinit { stop() }
    }

    @Test("Prometheus scrapes both agents and the collector; counters move as records flow and drops happen")
    func prometheusScrapes() async throws {
        guard TestPrometheus.isAvailable else {
            print(TestPrometheus.missingMessage)
            return
        }
        let fleet = try await Fleet("observability-prometheus")
        defer { fleet.stop() }
        let prometheus = try await TestPrometheus(
            directory: fleet.directory + "/prometheus",
            targets: [
                "collector": "127.0.0.1:\(fleet.collectorPort)", "agent_streaming": "127.0.0.1:\(fleet.streamingPort)",
                "agent_cut_off": "127.0.0.1:\(fleet.cutOffPort)",
            ])

        let allUp = await eventually(timeout: .seconds(40)) {
            let up = prometheus.query("up")
            return up.count == 3 && up.allSatisfy { $0.value == 1 }
        }
        #expect(allUp, "up: \(prometheus.query("up")); prometheus log: \(prometheus.log.suffix(1500))")

        // Records flow: the collector's stored count and the agent's appended count grow between scrapes.
        let stored = #"uplink_collector_records_stored_total{job="collector"}"#
        let appended = #"uplink_records_appended_total{job="agent_streaming",source="gen"}"#
        let firstStored = await value(stored, in: prometheus)
        let firstAppended = await value(appended, in: prometheus)
        let grew = await eventually(timeout: .seconds(20)) {
            (prometheus.value(stored) ?? 0) > (firstStored ?? .infinity)
                && (prometheus.value(appended) ?? 0) > (firstAppended ?? .infinity)
        }
        #expect(grew, "stored \(String(describing: firstStored)) → \(String(describing: prometheus.value(stored)))")
        #expect(prometheus.value(#"uplink_stream_up{job="agent_streaming"}"#) == 1)
        #expect(prometheus.value(#"uplink_stream_state{job="agent_streaming",state="streaming"}"#) == 1)
        #expect((prometheus.value(#"uplink_bytes_sent_total{job="agent_streaming"}"#) ?? 0) > 0)
        #expect(prometheus.value(#"uplink_collector_active_streams{job="collector"}"#) == 1)

        // Drops: the cut-off agent's 4 KiB buffer overflows, its stream is down, its reconnects are counted by cause.
        let dropped = #"sum(uplink_records_dropped_total{job="agent_cut_off",reason="buffer_full_drop_oldest"})"#
        let dropsCounted = await eventually(timeout: .seconds(20)) { (prometheus.value(dropped) ?? 0) > 0 }
        #expect(dropsCounted, "dropped: \(prometheus.query(dropped))")
        let firstDropped = prometheus.value(dropped) ?? 0
        let dropsGrew = await eventually(timeout: .seconds(20)) { (prometheus.value(dropped) ?? 0) > firstDropped }
        #expect(dropsGrew)
        #expect(prometheus.value(#"uplink_stream_up{job="agent_cut_off"}"#) == 0)
        #expect((prometheus.value(#"sum(uplink_stream_failures_total{job="agent_cut_off",reason="transport"})"#) ?? 0) > 0)
        #expect((prometheus.value(#"uplink_oldest_unacknowledged_age_seconds{job="agent_cut_off"}"#) ?? -1) >= 0)

        // docs/metrics.md lists every series the three endpoints export.
        let docs = try String(contentsOfFile: Self.repository + "/docs/metrics.md", encoding: .utf8)
        for port in [fleet.collectorPort, fleet.streamingPort, fleet.cutOffPort] {
            let exposition = Self.get(port, "/metrics")?.text ?? ""
            let names = exposition.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
            #expect(names.count > 10, "port \(port): \(exposition.prefix(300))")
            for name in names { #expect(docs.contains("`\(name)`"), "docs/metrics.md does not list \(name)") }
        }

        // Readiness on both ends.
        #expect(Self.get(fleet.collectorPort, "/readyz")?.status == 200)
        #expect(Self.get(fleet.streamingPort, "/readyz?stream=1")?.status == 200)
        #expect(Self.get(fleet.cutOffPort, "/readyz")?.status == 200)
        #expect(Self.get(fleet.cutOffPort, "/readyz?stream=1")?.status == 503)
        await prometheus.stop()
    }

    @Test("uplink status shows a running agent as text and as JSON, and exits 1 when no agent answers")
    func statusCommand() async throws {
        let fleet = try await Fleet("observability-status")
        defer { fleet.stop() }
        // Let the streaming agent send something first.
        let flowing = await eventually(timeout: .seconds(20)) {
            let result = try? await Self.uplink(["status", "--json", "--address", "127.0.0.1:\(fleet.streamingPort)"])
            guard let result, result.status == 0,
                let status = try? AgentStatus.decoder().decode(AgentStatus.self, from: Data(result.standardOutput.utf8))
            else { return false }
            return status.stream.state == "streaming" && status.stream.acknowledged > 0
        }
        #expect(flowing, "streaming agent log: \(fleet.log("streaming").suffix(1500))")

        let json = try await Self.uplink(["status", "--json", "--address", "127.0.0.1:\(fleet.streamingPort)"])
        #expect(json.status == 0, "stderr: \(json.standardError)")
        let status = try AgentStatus.decoder().decode(AgentStatus.self, from: Data(json.standardOutput.utf8))
        #expect(status.agent == "box-streaming")
        #expect(status.ready)
        #expect(status.stream.collectorURL == "http://127.0.0.1:\(fleet.collectorPort)")
        #expect(status.sources.map(\.name) == ["gen"])
        #expect(status.sources.first?.kind == "generator")
        #expect(status.sources.first?.state == "running")
        #expect((status.sources.first?.records ?? 0) > 0)
        #expect((status.sources.first?.recordsPerSecond ?? 0) > 0)
        #expect(json.standardOutput.contains(#""collector_url":"#))
        #expect(json.standardOutput.contains(#""oldest_unacknowledged_age_seconds""#) || status.buffer.frames == 0)

        let text = try await Self.uplink(["status", "--address", "127.0.0.1:\(fleet.streamingPort)"])
        #expect(text.status == 0, "stderr: \(text.standardError)")
        #expect(text.standardOutput.contains("agent box-streaming"))
        #expect(text.standardOutput.contains("stream   streaming"))
        #expect(text.standardOutput.contains("http://127.0.0.1:\(fleet.collectorPort)"))
        #expect(text.standardOutput.contains("gen"))

        // The cut-off agent: its last error and its drops are visible.
        let cutOff = await eventually(timeout: .seconds(20)) {
            let result = try? await Self.uplink(["status", "--address", "127.0.0.1:\(fleet.cutOffPort)"])
            return result?.standardOutput.contains("last error") == true
                && result?.standardOutput.contains("records dropped in total") == true
        }
        if !cutOff {
            let last = try? await Self.uplink(["status", "--address", "127.0.0.1:\(fleet.cutOffPort)"])
            Issue.record("uplink status of the cut-off agent: \(last?.standardOutput ?? "")")
        }

        // --watch redraws in place (clear screen, home) until interrupted.
        let (watch, watched) = try UplinkBinary.start(
            ["status", "--watch", "--interval", "0.2", "--address", "127.0.0.1:\(fleet.streamingPort)"], capturing: .standardOutput)
        let redrawn = await eventually(timeout: .seconds(15)) {
            watched.text.components(separatedBy: "\u{1B}[H\u{1B}[2J").count >= 4
        }
        watch.interrupt()
        await watch.awaitExit()
        #expect(redrawn, "\(watched.text.prefix(500))")
        #expect(watched.text.contains("agent box-streaming"))

        // The address from the agent's own configuration file.
        let fromConfig = try await Self.uplink(["status", "--config", fleet.directory + "/streaming.yaml"])
        #expect(fromConfig.status == 0)
        #expect(fromConfig.standardOutput.contains("agent box-streaming"))

        // Nobody listening: exit 1 and a message saying what to check.
        let nobody = try await Self.uplink(["status", "--address", "127.0.0.1:\(try FreePort.pick())"])
        #expect(nobody.status == 1)
        #expect(nobody.standardError.contains("no agent answers at"))
        #expect(nobody.standardError.contains("(connection refused)"), "\(nobody.standardError)")
        #expect(nobody.standardOutput.isEmpty)
        // A configuration without agent.metrics_listen: exit 1, naming the key.
        let noEndpoint = try await Self.uplink(["status", "--config", fleet.directory + "/collector.yaml"])
        #expect(noEndpoint.status == 1)
        #expect(noEndpoint.standardError.contains("agent.metrics_listen"))
    }

    static let repository = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// One GET; Hummingbird keeps even an HTTP/1.0 connection open unless asked to close it.
    static func get(_ port: Int, _ path: String) -> LoopbackHTTP10.Response? {
        LoopbackHTTP10.request(port: port, path: path, headers: ["Connection": "close"])
    }

    private func value(_ query: String, in prometheus: TestPrometheus) async -> Double? {
        var result: Double?
        _ = await eventually(timeout: .seconds(20)) {
            result = prometheus.value(query)
            return result != nil
        }
        return result
    }

    static func uplink(_ arguments: [String]) async throws -> (status: Int32, standardOutput: String, standardError: String) {
        try await UplinkBinary.run(arguments)
    }
}
