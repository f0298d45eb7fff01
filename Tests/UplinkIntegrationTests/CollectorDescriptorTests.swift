import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport

/// `uplink collector` as a child process with a low descriptor limit, flooded with connections.
@Suite("Collector out of file descriptors", .serialized, .timeLimit(.minutes(6)))
struct CollectorDescriptorTests {
    /// CPU seconds (user + system) `pid` used so far, from /proc/<pid>/stat.
    static func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the parenthesised command name; utime and stime are fields 14 and 15 of the whole line.
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        let ticks = Double(fields[11])! + Double(fields[12])!
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test("Past RLIMIT_NOFILE the collector backs off instead of spinning, says so, and serves again after the flood")
    func emfileBacksOff() async throws {
        try await CPUGate.exclusive {
            let directory = try Harness.temporaryDirectory("emfile")
            let port = try FreePort.pick()
            let config = directory + "/collector.yaml"
            try """
                collector:
                  listen: 127.0.0.1:\(port)
                  data_dir: \(directory)/data
                  stdout: false
                  request_head_timeout: 60s
                """.write(toFile: config, atomically: true, encoding: .utf8)
            // ulimit -n sets the soft and the hard limit, so the collector cannot raise it at start.
            let (process, log) = try UplinkBinary.start(["collector", "--config", config], limits: "ulimit -n 40")
            // Cannot await here: the collector is told to stop, and killed and reaped if it still runs when released.
            defer { if process.isRunning { process.terminate() } }

            var client = HTTPClient.Configuration()
            client.timeout = .init(connect: .seconds(2), read: .seconds(2))
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: client)
            do {
                try await flood(port: port, http: http, process: process, log: log)
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    private func flood(port: Int, http: HTTPClient, process: SpawnedProcess, log: CapturedOutput) async throws {
        func healthy() async -> Bool {
            guard let response = try? await http.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/healthz"), timeout: .seconds(3))
            else { return false }
            return response.status == .ok
        }
        #expect(await eventually(timeout: .seconds(30)) { await healthy() }, "log: \(log.text)")

        // 80 connections that send nothing: about 25 fit under the limit, the rest meet EMFILE.
        let floodStart = ContinuousClock.now
        var flood: [LoopbackTestClient] = []
        for _ in 0..<80 { flood.append(try await LoopbackTestClient.connect(port: port)) }
        let said = await eventually(timeout: .seconds(30)) { log.text.contains("out of file descriptors") }
        #expect(said, "no log line about EMFILE: \(log.text.suffix(2000))")

        // While still out of descriptors: the CPU time the collector uses over a stretch of wall time. Spinning on
        // accept uses a core (measured here: 0.24 on a machine with a load of 8 on 2 cores, 0.67 with less load);
        // backing off uses a few wake-ups per second (measured: 0.002).
        let clock = ContinuousClock()
        let cpuBefore = try Self.cpuSeconds(process.processIdentifier)
        let start = clock.now
        try await Task.sleep(for: .seconds(3))
        let cpu = try Self.cpuSeconds(process.processIdentifier) - cpuBefore
        let elapsed = clock.now - start
        let ratio = cpu / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
        #expect(ratio < 0.1, "the collector used \(cpu) s of CPU in \(elapsed): it spins")
        print("EMFILE flood: collector CPU \(cpu) s over \(elapsed) (ratio \(ratio))")
        #expect(process.isRunning)

        for connection in flood { await connection.close() }
        let served = await eventually(timeout: .seconds(30)) { await healthy() }
        #expect(served, "the collector does not serve after the flood: \(log.text.suffix(2000))")
        let lines = log.text.split(separator: "\n").filter { $0.contains("out of file descriptors") }
        // Rate-limited: a burst of 20, then one line per 5 s (LogRateLimiter's defaults) for as long as the flood lasted
        // (longer on a loaded machine), not one per failed accept.
        let allowed = 20 + Int((ContinuousClock.now - floodStart) / .seconds(5)) + 1
        #expect(lines.count >= 1 && lines.count <= allowed, "\(lines.count) lines, at most \(allowed) allowed")
    }

    @Test("uplink collector raises its soft descriptor limit to the hard limit at start")
    func softLimitRaised() async throws {
        let directory = try Harness.temporaryDirectory("nofile")
        let port = try FreePort.pick()
        let (process, log) = try UplinkBinary.start(
            ["collector", "--port", String(port), "--data-dir", directory, "--no-stdout"], limits: "ulimit -S -n 256")
        // Cannot await here: the collector is told to stop, and killed and reaped if it still runs when released.
        defer { if process.isRunning { process.terminate() } }
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        let hard = Int(limit.rlim_max)
        try #require(hard > 256, "the hard limit here is \(hard): nothing to raise")
        let raised = await eventually(timeout: .seconds(30)) {
            (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/limits", encoding: .utf8))?
                .split(separator: "\n").first { $0.hasPrefix("Max open files") }?
                .split(separator: " ", omittingEmptySubsequences: true).dropFirst(3).prefix(2).map(String.init)
                == [String(hard), String(hard)]
        }
        #expect(raised)
        #expect(await eventually(timeout: .seconds(10)) { log.text.contains("Raised the open file limit") })
        #expect(log.text.contains("previous=256"))
        #expect(log.text.contains("soft=\(hard)"))
    }
}
