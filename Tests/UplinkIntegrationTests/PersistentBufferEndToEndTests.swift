import Foundation
import Testing
import UplinkCore
import UplinkTestSupport

/// `buffer.persist` with real `uplink run` processes, a real `uplink collector` process and real files: the same
/// stream across a SIGTERM restart (`spill`) and across 20 SIGKILLs (`always`), and no disk writes while healthy.
@Suite("Persistent buffer end to end", .serialized, .timeLimit(.minutes(6)))
struct PersistentBufferEndToEndTests {
    /// An agent process with a configuration file written for it.
    struct AgentProcess {
        let child: ChildProcess
        let logPath: String

        init(binary: String, directory: String, configuration: String, logLevel: String = "info") throws {
            let config = directory + "/agent.yaml"
            try configuration.write(toFile: config, atomically: true, encoding: .utf8)
            logPath = directory + "/agent.log"
            child = try ChildProcess(
                [binary, "run", "--config", config, "--log-level", logLevel], outputPath: logPath)
        }

        var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
    }

    static func configuration(
        port: Int, stateDirectory: String, mode: String, sources: String, extraPersist: String = ""
    ) -> String {
        """
        agent:
          id: persist-agent
          state_dir: \(stateDirectory)
        buffer:
          max_bytes: 4MiB
          persist:
            mode: \(mode)
            max_bytes: 64MiB
        \(extraPersist)
        uplink:
          url: http://127.0.0.1:\(port)
          backoff: { initial: 50ms, max: 200ms }
          drain_timeout: 2s
        sources:
        \(sources)
        """
    }

    /// Bytes of the segment files in `directory`.
    static func segmentBytes(_ directory: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".seg") }.reduce(0) {
            $0 + ((try? FileManager.default.attributesOfItem(atPath: directory + "/" + $1)[.size] as? Int) ?? 0)
        }
    }

    /// `write_bytes` of `/proc/PID/io`: bytes the process caused to be written to storage.
    static func writeBytes(_ pid: Int32) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("write_bytes:") {
            return Int(line.split(separator: " ").last ?? "")
        }
        return nil
    }

    /// Stored records with their source, epoch and sequence (records.jsonl lines carry `"epoch":E`).
    static func stored(_ dataDirectory: String) throws -> [(epoch: UInt64, sequence: UInt64, source: String, counter: Int?)] {
        let records = try Harness.storedRecords(in: dataDirectory)
        let lines = try String(contentsOfFile: dataDirectory + "/records.jsonl", encoding: .utf8)
            .split(separator: "\n")
        #expect(lines.count == records.count)
        return zip(lines, records).map { line, record in
            let epochText = line.split(separator: "\"epoch\":").dropFirst().first?.prefix { $0.isNumber } ?? ""
            return (UInt64(epochText) ?? 0, record.sequence, record.record.source, Harness.generatorCounter(record.record))
        }
    }

    static func storedCount(_ dataDirectory: String) -> Int {
        guard let data = FileManager.default.contents(atPath: dataDirectory + "/records.jsonl") else { return 0 }
        return data.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
    }

    /// Whether a record of source `source` is stored (its name, quoted, is in records.jsonl).
    static func storesAny(from source: String, _ dataDirectory: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: dataDirectory + "/records.jsonl") else { return false }
        return data.range(of: Data("\"\(source)\"".utf8)) != nil
    }

    /// The `next_sequence` of the agent's "persistent buffer closed" line (its clean shutdown).
    static func closedNextSequence(_ log: String) -> UInt64? {
        guard let line = log.split(separator: "\n").last(where: { $0.contains("persistent buffer closed") }),
            let value = line.split(separator: "next_sequence=").dropFirst().first?.prefix(while: { $0.isNumber })
        else { return nil }
        return UInt64(value)
    }

    @Test("spill: collector down, N records buffered, SIGTERM, restart, collector back: all N exactly once, one epoch")
    func spillSurvivesARestart() async throws {
        let binary = try UplinkBinary.path()
        let directory = try Harness.temporaryDirectory("persist-spill")
        let state = directory + "/state"
        // Held bound, not listening, until the collector starts: every attempt is refused, and no other test's
        // server can be given the port in the seconds before (the agent would stream to it instead).
        let reservation = try FreePort.reserve()
        let port = reservation.port
        let total = 3000
        let first = try AgentProcess(
            binary: binary, directory: directory,
            configuration: Self.configuration(
                port: port, stateDirectory: state, mode: "spill",
                sources: "  - { name: before, type: generator, rate: 5000, count: \(total), record_bytes: 120 }",
                extraPersist: "    spill_after: 300ms"))
        // The generator is done and its records spilled once the segments stop growing (bounded wait).
        await settles(quiet: .milliseconds(1200), timeout: .seconds(40), accept: { $0 > 0 }) {
            Self.segmentBytes(state + "/buffer")
        }
        first.child.send(SIGTERM)
        #expect(await first.child.waitForExit(seconds: 30), "the agent did not stop after SIGTERM")
        #expect(first.child.exitStatus.map { ($0 >> 8) & 0xFF } == 0)
        let produced = try #require(Self.closedNextSequence(first.log), "no clean close in the log:\n\(first.log)")
        #expect(produced == UInt64(total) + 1, "the first run assigned \(produced - 1) of \(total) sequences")

        let second = try AgentProcess(
            binary: binary, directory: directory,
            configuration: Self.configuration(
                port: port, stateDirectory: state, mode: "spill",
                sources: "  - { name: after, type: generator, rate: 10, count: 0 }"))
        try await Task.sleep(for: .milliseconds(500))  // it retries against the refused port meanwhile
        let dataDirectory = directory + "/collector"
        reservation.release()
        let collector = try CollectorProcess(binary: binary, port: port, dataDirectory: dataDirectory)
        defer { collector.process.send(SIGTERM) }  // released then: killed and reaped if still running
        try await collector.waitUntilHealthy()
        let arrived = await eventually(timeout: .seconds(60)) { Self.storedCount(dataDirectory) >= total }
        #expect(arrived, "stored \(Self.storedCount(dataDirectory)) of \(total)")
        await second.child.terminate(grace: 15)

        let stored = try Self.stored(dataDirectory)
        #expect(stored.count == total)
        #expect(Set(stored.map(\.epoch)).count == 1, "epochs: \(Set(stored.map(\.epoch)))")
        #expect(stored.map(\.sequence).sorted() == Array(1...UInt64(total)))
        #expect(Harness.exactlyOnceProblem(stored.compactMap(\.counter), total: total) == nil)
        #expect(second.log.contains("persistent buffer open"))
    }

    @Test("always: 20 SIGKILLs while streaming: every sequence assigned arrives exactly once, one epoch, no gap")
    func alwaysSurvivesTwentyKills() async throws {
        try await CPUGate.exclusive {
            let binary = try UplinkBinary.path()
            let directory = try Harness.temporaryDirectory("persist-always")
            let state = directory + "/state"
            let port = try FreePort.pick()
            let dataDirectory = directory + "/collector"
            let collector = try CollectorProcess(binary: binary, port: port, dataDirectory: dataDirectory)
            defer { collector.process.send(SIGTERM) }  // released then: killed and reaped if still running
            try await collector.waitUntilHealthy()
            var random = SystemRandomNumberGenerator()
            for run in 0..<20 {
                let agent = try AgentProcess(
                    binary: binary, directory: directory,
                    configuration: Self.configuration(
                        port: port, stateDirectory: state, mode: "always",
                        sources: "  - { name: run-\(run), type: generator, rate: 4000, record_bytes: 100 }",
                        extraPersist: "    sync_interval: 100ms"),
                    logLevel: "error")
                // Kill at a random moment once this run's records are arriving (some acknowledged, some in flight).
                // Its own: the records a killed run left are delivered first, and they alone would not say so.
                let flowing = await eventually(timeout: .seconds(30)) { Self.storesAny(from: "run-\(run)", dataDirectory) }
                #expect(flowing, "run \(run): nothing arrived")
                try await Task.sleep(for: .milliseconds(Int.random(in: 0...400, using: &random)))
                agent.child.send(SIGKILL)
                #expect(await agent.child.waitForExit(seconds: 10))
            }
            // A last run with nothing to add delivers what the killed ones left, then stops cleanly.
            let final = try AgentProcess(
                binary: binary, directory: directory,
                configuration: Self.configuration(
                    port: port, stateDirectory: state, mode: "always",
                    sources: "  - { name: final, type: generator, rate: 10, count: 0 }"))
            try await Task.sleep(for: .seconds(2))
            await final.child.terminate(grace: 15)
            let next = try #require(Self.closedNextSequence(final.log), "no clean close in the log:\n\(final.log)")

            let stored = try Self.stored(dataDirectory)
            #expect(Set(stored.map(\.epoch)).count == 1, "epochs: \(Set(stored.map(\.epoch)))")
            let sequences = stored.map(\.sequence).sorted()
            #expect(Set(sequences).count == sequences.count, "\(sequences.count - Set(sequences).count) duplicates")
            #expect(sequences == Array(1..<next), "stored \(sequences.count) sequences, expected 1..<\(next)")
            // Each run's generator counters are 0..<c: no record it appended is missing or repeated.
            for run in 0..<20 {
                let counters = stored.filter { $0.source == "run-\(run)" }.compactMap(\.counter)
                #expect(!counters.isEmpty, "run \(run) stored nothing")
                #expect(Harness.exactlyOnceProblem(counters, total: counters.count) == nil, "run \(run)")
            }
        }
    }

    @Test("spill while healthy: every sensor at 1 s writes zero bytes to storage; an outage then does write")
    func healthySpillWritesNothing() async throws {
        let binary = try UplinkBinary.path()
        let directory = try Harness.temporaryDirectory("persist-healthy")
        let state = directory + "/state"
        let port = try FreePort.pick()
        let dataDirectory = directory + "/collector"
        let collector = try CollectorProcess(binary: binary, port: port, dataDirectory: dataDirectory)
        defer { collector.process.send(SIGTERM) }  // released then: killed and reaped if still running
        try await collector.waitUntilHealthy()
        let sensors = ["cpu", "memory", "load", "uptime", "network", "disk", "diskio"]
            .map { "  - { name: \($0), type: \($0), interval: 1s }" }.joined(separator: "\n")
        // The log goes nowhere: log lines written to a file would count as the process's writes.
        let config = directory + "/agent.yaml"
        try Self.configuration(
            port: port, stateDirectory: state, mode: "spill", sources: sensors, extraPersist: "    spill_after: 1s"
        ).write(toFile: config, atomically: true, encoding: .utf8)
        let agent = try ChildProcess([binary, "run", "--config", config, "--log-level", "critical"])
        // Keeps the process alive to the end of the test; released then, a process still running is killed and reaped.
        defer { agent.send(SIGTERM) }
        let pid = agent.processIdentifier
        #expect(await eventually(timeout: .seconds(30)) { Self.storedCount(dataDirectory) > 0 })
        let start = try #require(Self.writeBytes(pid))
        // The documented benchmark measures 60 s; 10 s here spans ten spill checks and ten samples of each sensor.
        let storedBefore = Self.storedCount(dataDirectory)
        try await Task.sleep(for: .seconds(10))
        let healthy = try #require(Self.writeBytes(pid)) - start
        #expect(Self.storedCount(dataDirectory) >= storedBefore + 9, "the sensors kept reporting")
        #expect(healthy == 0, "the agent wrote \(healthy) bytes while healthy")
        #expect(Self.segmentBytes(state + "/buffer") == 0)

        // Control: with the collector gone, records wait and are spilled, and the same measurement sees it.
        await collector.kill()
        let wrote = await eventually(timeout: .seconds(30)) {
            (Self.writeBytes(pid) ?? 0) - start > 0 && Self.segmentBytes(state + "/buffer") > 0
        }
        #expect(wrote, "nothing written during the outage: the measurement cannot see writes")
    }
}
