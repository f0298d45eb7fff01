import Foundation
import Synchronization
import Testing
import UplinkTestSupport
import UplinkAgent
import UplinkCore

@Suite("Collector killed and restarted", .serialized, .timeLimit(.minutes(6)))
struct CollectorRestartTests {
    @Test("SIGKILL and restart 20 times while an agent streams 2,500 records/s: every record stored exactly once")
    func killAndRestartTwentyTimes() async throws {
        try await CPUGate.exclusive {
            let binary = try UplinkBinary.path()
            let dataDirectory = try Harness.temporaryDirectory("restarts")
            let port = try FreePort.pick()
            var collector = try CollectorProcess(binary: binary, port: port, dataDirectory: dataDirectory)
            try await collector.waitUntilHealthy()

            // 24 s of records: the 20 rounds must be over before the generator is (a round takes 0.5-2 s, depending
            // on the machine's load), or the last rounds have nothing left to make progress with.
            let total = 60_000
            let agent = RunningAgent(
                url: "http://127.0.0.1:\(port)", sources: [.generator(rate: 2_500, count: total)], bufferBytes: 32 << 20
            )
            var streamsBeforeKill = 0
            for round in 0..<20 {
                // Let some records through on the fresh collector before the next kill: first a stream to it (acks of
                // the killed one may still be on their way in the agent under load, so acks alone prove nothing), then
                // acknowledged progress on that stream.
                let connected = await eventually(timeout: .seconds(20)) {
                    agent.uplink.statistics().streamsOpened > streamsBeforeKill
                }
                #expect(connected, "round \(round): no stream to the restarted collector")
                let acknowledgedBefore = agent.ring.statistics().acknowledged
                let progressed = await eventually(timeout: .seconds(20)) {
                    let acknowledged = agent.ring.statistics().acknowledged
                    // On a very slow machine the generator may be done: then everything acknowledged is progress too.
                    return acknowledged > acknowledgedBefore + 200 || acknowledged >= UInt64(total)
                }
                #expect(progressed, "round \(round): no progress after restart")
                streamsBeforeKill = agent.uplink.statistics().streamsOpened
                await collector.kill()
                collector = try CollectorProcess(binary: binary, port: port, dataDirectory: dataDirectory)
                try await collector.waitUntilHealthy()
            }
            #expect(await agent.waitUntilAllAcknowledged(records: total, timeout: .seconds(120)))
            // The agent reconnects to the last collector even when nothing is left to send.
            let reconnected = await eventually(timeout: .seconds(20)) {
                agent.uplink.statistics().streamsOpened > streamsBeforeKill
            }
            #expect(reconnected)
            try await agent.stop()
            await collector.terminate()

            let stored = try Harness.storedRecords(in: dataDirectory)
            let counters = stored.compactMap { Harness.generatorCounter($0.record) }
            #expect(stored.count == total, "stored \(stored.count) of \(total)")
            #expect(Set(stored.map(\.sequence)).count == stored.count, "duplicates stored")
            #expect(Harness.exactlyOnceProblem(counters, total: total) == nil)
            #expect(agent.ring.statistics().sources.allSatisfy { $0.droppedOldest == 0 && $0.droppedNewest == 0 })
            // Every restart needs a new stream before records can be acknowledged again: one per collector process.
            #expect(agent.uplink.statistics().streamsOpened >= 21)
        }
    }
}

/// The `uplink` executable built next to this test bundle.
enum UplinkBinary {
    static func path() throws -> String {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        // The test runner may live inside the .xctest bundle or next to it.
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent("uplink").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        struct Missing: Error, CustomStringConvertible {
            let description = "the uplink executable was not built next to the tests; run `swift build` first"
        }
        throw Missing()
    }

    /// What `start` collects of a process's output.
    enum Captured {
        case standardError, standardOutput, both
    }

    /// Starts `uplink ARGUMENTS` with `environment` added to this process's, in `directory` if given, first lowering
    /// its limits with `limits` (a shell command such as `ulimit -n 40`) if given. What it prints to `captured` is
    /// collected in `output` (a file); the other stream is discarded. Spawned as a `SpawnedProcess`, not with
    /// Foundation's `Process` (see there).
    static func start(
        _ arguments: [String], capturing captured: Captured = .standardError, environment: [String: String] = [:],
        in directory: String? = nil, limits: String? = nil
    ) throws -> (process: SpawnedProcess, output: CapturedOutput) {
        let log = try TestDirectories.make("uplink-process-output") + "/output"
        // A shell changes the directory and the limits, then becomes `uplink` (`exec`: the same process id).
        let setUp = [directory == nil ? nil : #"cd "$1" && shift"#, limits].compactMap { $0 }
        let command =
            setUp.isEmpty
            ? [try path()]
            : ["/bin/sh", "-c", (setUp + [#"exec "$0" "$@""#]).joined(separator: " && "), try path()] + (directory.map { [$0] } ?? [])
        let merged = environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let process: SpawnedProcess
        switch captured {
        case .standardError:
            process = try SpawnedProcess(command + arguments, errorPath: log, environment: merged)
        case .standardOutput:
            process = try SpawnedProcess(
                command + arguments, outputPath: log, errorPath: "/dev/null", environment: merged)
        case .both:
            process = try SpawnedProcess(command + arguments, outputPath: log, environment: merged)
        }
        return (process, CapturedOutput(path: log))
    }

    /// Starts `uplink run --config CONFIG --log-level error`, an agent process whose output is discarded.
    static func startAgent(config: String) throws -> SpawnedProcess {
        try SpawnedProcess([try path(), "run", "--config", config, "--log-level", "error"])
    }

    /// Runs `uplink ARGUMENTS` to the end (`SpawnedProcess.run`, not Foundation's `Process`, whose `run()` can crash
    /// the test process: see `OpenSSL` in UplinkTestSupport): its exit status and what it printed.
    static func run(_ arguments: [String]) async throws -> (status: Int32, standardOutput: String, standardError: String) {
        let done = try await SpawnedProcess.run([try path()] + arguments)
        return (done.status, done.outputText, done.errorText)
    }
}

/// `uplink collector` as a child process (a `ChildProcess`: killed and reaped when released still running, so a
/// `defer` that cannot await only signals it).
struct CollectorProcess {
    let process: ChildProcess
    let port: Int
    /// Where its output goes (appended across restarts), for the error of a collector that never became healthy.
    let log: String

    /// Starts `binary collector` on `port`, storing under `dataDirectory`, logging errors only (to
    /// `<dataDirectory>.log`), with `extraArguments` after the others.
    init(binary: String, port: Int, dataDirectory: String, extraArguments: [String] = []) throws {
        log = dataDirectory + ".log"
        process = try ChildProcess(
            [binary, "collector", "--port", String(port), "--data-dir", dataDirectory, "--no-stdout", "--log-level", "error"]
                + extraArguments,
            outputPath: log)
        self.port = port
    }

    /// Starts `binary collector --config configuration` (which listens on `port`), logging warnings to `log`.
    init(binary: String, configuration: String, port: Int, log: String) throws {
        process = try ChildProcess([binary, "collector", "--config", configuration, "--log-level", "warning"], outputPath: log)
        self.port = port
        self.log = log
    }

    /// Waits until `GET /healthz` answers (a restarted process binds the same port); throws with what the collector
    /// wrote when it exited or did not answer in time.
    func waitUntilHealthy() async throws {
        struct NotHealthy: Error, CustomStringConvertible {
            let description: String
        }
        guard await LoopbackHTTP10.waitUntilOK(port: port, path: "/healthz", while: { process.isRunning }) else {
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? "(no output)"
            throw NotHealthy(
                description: "the collector on port \(port) \(process.isRunning ? "did not answer /healthz" : "exited"): \(output.suffix(2000))")
        }
    }

    /// SIGKILL; returns once it has exited.
    func kill() async {
        process.send(SIGKILL)
        await process.waitForExit(seconds: 10)
    }

    /// SIGTERM (a graceful stop), SIGKILL if it has not exited after 30 s; returns once it has exited.
    func terminate() async {
        await process.terminate(grace: 30)
    }
}
