import Foundation
import Testing
import UplinkTestSupport

/// Memory of a real agent process: whose collector stopped reading, and draining a backlog many times its ring.
@Suite("Agent memory under a stalled collector and a large backlog", .serialized, .timeLimit(.minutes(5)))
struct AgentMemoryTests {
    @Test("An agent generating many times its buffer into a stalled stream keeps its resident memory flat")
    func residentMemoryStaysBounded() async throws {
        let collector = try await InProcessCollector(name: "memory")
        let proxy = FaultProxy(upstreamPort: collector.port)
        try await proxy.start()
        proxy.setStalled(true)  // the stream opens but no byte reaches the collector, and none comes back

        let directory = try Harness.temporaryDirectory("memory")
        let config = directory + "/agent.yaml"
        try """
            agent:
              id: memory-agent
            buffer:
              max_bytes: 8MiB
            uplink:
              url: http://127.0.0.1:\(proxy.port)
              stall_timeout: 10m
            sources:
              - name: flood
                type: generator
                rate: 200000
                record_bytes: 200
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let process = try UplinkBinary.startAgent(config: config)
        // Cannot await here: the agent is told to stop, and killed and reaped if it still runs when released.
        defer { process.terminate() }

        // Let the ring fill (8 MiB): resident memory stops growing (less than 1 MiB over a second; on a loaded machine
        // that takes longer than on an idle one). Then measure while the generator keeps overflowing it.
        var window: [(at: ContinuousClock.Instant, bytes: Int)] = []
        let filled = await eventually(timeout: .seconds(60)) {
            guard let bytes = Self.residentBytes(of: process.processIdentifier) else { return false }
            let now = ContinuousClock.now
            window.append((now, bytes))
            guard let first = window.first, now - first.at >= .seconds(1) else { return false }
            window.removeAll { now - $0.at > .seconds(1) }
            let sizes = window.map(\.bytes)
            return sizes.max()! - sizes.min()! < 1 << 20
        }
        #expect(filled, "resident memory never stopped growing: \(window.last.map { $0.bytes >> 20 } ?? 0) MiB")
        let settled = try #require(Self.residentBytes(of: process.processIdentifier))
        var peak = settled
        for _ in 0..<8 {
            try await Task.sleep(for: .milliseconds(500))
            peak = max(peak, try #require(Self.residentBytes(of: process.processIdentifier)))
        }
        #expect(process.isRunning)
        // Over these 4 s the generator offers tens of megabytes: all of it must have been dropped, not kept.
        #expect(peak - settled < 16 << 20, "resident memory grew from \(settled >> 20) MiB to \(peak >> 20) MiB")
        try await proxy.stop()
        try await collector.stop()
    }

    /// Bounded memory: the ring fills and wraps many times while the agent reads the file as fast as
    /// the collector takes it. What the agent allocates (RssAnon: the ring, the encoders, the pending lines, the
    /// allocator's arenas) stays within the ring's capacity plus 12 MiB, whatever the file's size; nothing is kept per
    /// line beyond what the ring holds. The whole peak (VmHWM, code pages included) is the release binary's to meet
    /// (≤ ring + 16 MiB, `deploy/backlog-memory.sh`): this debug build's code alone is about 26 MiB resident.
    @Test("A real agent tails a file nine times its ring to a collector process: its allocations stay ≤ ring + 12 MiB, and the ring's pages go back once it is idle")
    func backlogDrainPeak() async throws {
        let ringBytes = 4 << 20  // small, so that nine rings of lines cost the machine little under the other tests
        let lineBytes = 200
        let lines = 9 * ringBytes / lineBytes
        let directory = try Harness.temporaryDirectory("backlog-memory")
        let logPath = directory + "/backlog.log"
        let filler = String(repeating: "x", count: lineBytes - 22)
        var text = ""
        text.reserveCapacity(lines * lineBytes)
        for index in 0..<lines {
            let number = String(index)
            text += String(repeating: "0", count: 12 - number.count) + number + " backlog " + filler + "\n"
        }
        try text.write(toFile: logPath, atomically: false, encoding: .utf8)
        text = ""

        let binary = try UplinkBinary.path()
        let port = try FreePort.pick()
        let collector = try CollectorProcess(
            binary: binary, port: port, dataDirectory: directory + "/collector", extraArguments: ["--no-jsonl"])
        defer { collector.process.send(SIGTERM) }  // released then: killed and reaped if still running
        try await collector.waitUntilHealthy()

        let config = directory + "/agent.yaml"
        let endpointPort = try FreePort.pick()
        try """
            agent: { id: backlog-agent, state_dir: \(directory)/state, metrics_listen: 127.0.0.1:\(endpointPort) }
            uplink: { url: "http://127.0.0.1:\(port)", heartbeat: 1s }
            buffer: { max_bytes: \(ringBytes) }
            sources:
              - { name: backlog, type: tail, paths: [\(logPath)], start_at: beginning }
            """.write(toFile: config, atomically: true, encoding: .utf8)
        let agent = try ChildProcess(
            [binary, "run", "--config", config, "--log-level", "info"], outputPath: directory + "/agent.log")
        // Keeps the process alive to the end of the test; released then, a process still running is killed and reaped.
        defer { agent.send(SIGTERM) }

        var peakAnonymous = 0
        var peakFile = 0
        var highWater = 0
        let drained = await eventually(timeout: .seconds(240)) {
            guard let status = Self.status(of: agent.processIdentifier) else { return false }
            peakAnonymous = max(peakAnonymous, status["RssAnon"] ?? 0)
            peakFile = max(peakFile, status["RssFile"] ?? 0)
            highWater = max(highWater, status["VmHWM"] ?? 0)
            return Self.recordsStored(port: port, agent: "backlog-agent") == lines
        }
        let log = (try? String(contentsOfFile: directory + "/agent.log", encoding: .utf8)) ?? ""
        #expect(drained, "stored \(Self.recordsStored(port: port, agent: "backlog-agent") ?? 0) of \(lines)\n\(log.suffix(2000))")
        #expect(agent.isRunning)
        let measured =
            "VmHWM \(highWater >> 20) MiB with a ring of \(ringBytes >> 20) MiB; peaks RssAnon \(peakAnonymous >> 20) MiB, "
            + "RssFile \(peakFile >> 20) MiB"
        print("backlog memory: \(measured)")
        #expect(peakAnonymous <= ringBytes + 12 << 20, "\(measured)")

        // The drain wrote the whole ring at speed, so it kept its pages; once the stream has been idle for a
        // heartbeat (1 s here) they go back: a chunk or two of the ring stays (256 KiB chunks for this one).
        var resident: Int?
        let released = await eventually(timeout: .seconds(30)) {
            resident = Self.ringResidentBytes(endpointPort: endpointPort)
            return (resident ?? .max) <= ringBytes / 4
        }
        #expect(released, "the ring still holds \(resident.map { "\($0 >> 10) KiB" } ?? "?") of \(ringBytes >> 10) KiB")
    }

    /// `buffer.resident_bytes` of the agent's `GET /v1/status`.
    static func ringResidentBytes(endpointPort: Int) -> Int? {
        guard let response = LoopbackHTTP10.request(port: endpointPort, path: "/v1/status", headers: ["Connection": "close"]),
            let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
            let buffer = object["buffer"] as? [String: Any]
        else { return nil }
        return (buffer["resident_bytes"] as? NSNumber)?.intValue
    }

    /// Sizes from `/proc/PID/status` in bytes (`VmHWM`, `RssAnon`, `RssFile`, …), or nil once the process is gone.
    static func status(of pid: Int32) -> [String: Int]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        var values: [String: Int] = [:]
        for line in text.split(separator: "\n") where line.hasSuffix(" kB") {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let kib = Int(parts[1].dropLast(3).trimmingCharacters(in: .whitespaces)) else { continue }
            values[String(parts[0])] = kib * 1024
        }
        return values
    }

    /// `records_stored` of `agent` in the collector's `GET /v1/fleet`, or nil before the agent shows there.
    static func recordsStored(port: Int, agent: String) -> Int? {
        guard let response = LoopbackHTTP10.request(port: port, path: "/v1/fleet", headers: ["Connection": "close"]),
            let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
            let agents = object["agents"] as? [[String: Any]],
            let entry = agents.first(where: { $0["agent"] as? String == agent })
        else { return nil }
        return (entry["records_stored"] as? NSNumber)?.intValue
    }

    static func residentBytes(of pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }.map { $0 * 1024 }
        }
        return nil
    }
}
