import Foundation
import Testing
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkSources
import UplinkTestSupport

/// The journald source through the real agent → loopback HTTP → collector path: journal files written by
/// systemd-journal-remote while the agent follows them, restarts and SIGKILLs in the middle, an idle agent's CPU.
@Suite("journald end to end", .serialized, .timeLimit(.minutes(6)))
struct JournaldEndToEndTests {
    /// The number of a stored `n=<number>` record.
    static func number(_ record: Record) -> Int? {
        guard case .log(let line) = record.payload, line.message.hasPrefix("n=") else { return nil }
        return Int(line.message.dropFirst(2))
    }

    static func storedNumbers(_ collector: InProcessCollector) throws -> [Int] {
        try Harness.storedRecords(in: collector.dataDirectory).compactMap { number($0.record) }
    }

    static func journaldSource(_ directory: String) -> AgentConfiguration.NamedSource {
        var config = JournaldConfig()
        config.directory = directory
        config.since = .beginning
        config.checkpointInterval = .milliseconds(100)
        return .init(name: "journal", config: SourceConfig(config))
    }

    /// The agent's YAML for a process of its own.
    static func agentConfig(_ directory: String, journal: String, collector: InProcessCollector) -> String {
        """
        agent:
          id: journald-agent
          state_dir: \(directory)/state
        uplink:
          url: \(collector.url)
        sources:
          - name: journal
            type: journald
            directory: \(journal)
            since: beginning
            checkpoint_interval: 200ms
        """
    }

    @Test("Graceful restarts in the middle while a writer appends: every entry stored exactly once, none sent twice")
    func gracefulRestart() async throws {
        guard TestJournal.isAvailable else { print(TestJournal.skipMessage); return }
        try await CPUGate.exclusive {
            let directory = try Harness.temporaryDirectory("journald-restart")
            let journal = directory + "/journal"
            try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: true)
            let collector = try await InProcessCollector(name: "journald-restart")
            var next = 0
            func write(_ count: Int, file: String = "system.journal") async throws {
                try await TestJournal.append(TestJournal.numbered(next..<(next + count)), to: journal + "/" + file)
                next += count
            }
            for round in 0..<3 {
                let agent = RunningAgent(url: collector.url, sources: [Self.journaldSource(journal)], stateDirectory: directory + "/state")
                let before = collector.recordsStored
                for _ in 0..<5 { try await write(400) }
                _ = await eventually(timeout: .seconds(30)) { collector.recordsStored >= before + 1000 }
                try await write(400, file: "round-\(round).journal")  // a new file too, in flight at the stop
                try await agent.stop()
                #expect(collector.collector.statistics().resentDiscarded == 0, "round \(round): an entry was sent again")
            }
            try await write(10)
            let agent = RunningAgent(url: collector.url, sources: [Self.journaldSource(journal)], stateDirectory: directory + "/state")
            let total = next
            let arrived = await eventually(timeout: .seconds(60)) { collector.recordsStored >= total }
            try await agent.stop()
            try await collector.stop()
            #expect(arrived)
            #expect(Harness.exactlyOnceProblem(try Self.storedNumbers(collector), total: total) == nil)
            #expect(collector.collector.statistics().resentDiscarded == 0)
        }
    }

    @Test("SIGKILL of the agent process while it follows the journal: after restarts every entry is stored exactly once")
    func killedAgent() async throws {
        guard TestJournal.isAvailable else { print(TestJournal.skipMessage); return }
        try await CPUGate.exclusive {
            let directory = try Harness.temporaryDirectory("journald-kill")
            let journal = directory + "/journal"
            try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: true)
            let collector = try await InProcessCollector(name: "journald-kill")
            let config = directory + "/agent.yaml"
            try Self.agentConfig(directory, journal: journal, collector: collector).write(toFile: config, atomically: true, encoding: .utf8)
            var next = 0
            let kills = 4
            for kill in 0..<kills {
                let process = try UplinkBinary.startAgent(config: config)
                // Entries keep coming while the agent reads, sends and checkpoints; then it is killed mid-stream.
                for _ in 0..<8 {
                    try await TestJournal.append(TestJournal.numbered(next..<(next + 250)), to: journal + "/system.journal")
                    next += 250
                    try await Task.sleep(for: .milliseconds(50))
                }
                if kill == 1 {
                    // A rotation: entries go to a new file (a new sequence, so a new origin).
                    try await TestJournal.append(TestJournal.numbered(next..<(next + 250)), to: journal + "/rotated.journal")
                    next += 250
                }
                Glibc.kill(process.processIdentifier, SIGKILL)
                await process.awaitExit()
            }
            let process = try UplinkBinary.startAgent(config: config)
            let total = next
            let arrived = await eventually(timeout: .seconds(90)) { collector.recordsStored >= total }
            process.terminate()
            await process.awaitExit()
            try await collector.stop()
            let stored = try Self.storedNumbers(collector)
            #expect(arrived, "\(stored.count) of \(total)")
            #expect(Harness.exactlyOnceProblem(stored, total: total) == nil)
            print("journald SIGKILL ×\(kills): \(total) entries, \(collector.collector.statistics().resentDiscarded) sent again after a kill and discarded by the collector")
        }
    }

    @Test("An agent process following an idle journal directory with a corrupt file neither crashes nor spins")
    func idleAndCorrupt() async throws {
        guard TestJournal.isAvailable else { print(TestJournal.skipMessage); return }
        try await CPUGate.exclusive {
            let directory = try Harness.temporaryDirectory("journald-idle")
            let journal = directory + "/journal"
            try FileManager.default.createDirectory(atPath: journal, withIntermediateDirectories: true)
            try await TestJournal.append(TestJournal.numbered(0..<100), to: journal + "/system.journal")
            try await TestJournal.append(TestJournal.numbered(0..<100, prefix: "bad="), to: journal + "/damaged.journal")
            var damaged = try Data(contentsOf: URL(fileURLWithPath: journal + "/damaged.journal"))
            var generator = SystemRandomNumberGenerator()
            for index in stride(from: 2048, to: min(damaged.count, 100_000), by: 1) { damaged[index] = UInt8.random(in: 0...255, using: &generator) }
            try damaged.write(to: URL(fileURLWithPath: journal + "/damaged.journal"))
            try Data((0..<50_000).map { _ in UInt8.random(in: 0...255, using: &generator) }).write(to: URL(fileURLWithPath: journal + "/garbage.journal"))

            let collector = try await InProcessCollector(name: "journald-idle")
            let config = directory + "/agent.yaml"
            try Self.agentConfig(directory, journal: journal, collector: collector).write(toFile: config, atomically: true, encoding: .utf8)
            let process = try UplinkBinary.startAgent(config: config)
            #expect(await eventually(timeout: .seconds(30)) { (try? Self.storedNumbers(collector).count) ?? 0 >= 100 })
            try await Task.sleep(for: .seconds(1))  // settle: checkpoint written, stream idle
            let before = try CollectorDescriptorTests.cpuSeconds(process.processIdentifier)
            try await Task.sleep(for: .seconds(5))
            let used = try CollectorDescriptorTests.cpuSeconds(process.processIdentifier) - before
            #expect(process.isRunning)
            // Idle: the heartbeat and the stream only; a spinning reader would use the whole 5 s.
            #expect(used < 0.25, "the idle agent used \(used) s of CPU in 5 s")
            // Still following.
            try await TestJournal.append(TestJournal.numbered(100..<110), to: journal + "/system.journal")
            #expect(await eventually(timeout: .seconds(30)) { (try? Self.storedNumbers(collector).count) ?? 0 >= 110 })
            process.terminate()
            await process.awaitExit()
            try await collector.stop()
            #expect(try Self.storedNumbers(collector) == Array(0..<110))
            print("journald idle following (a corrupt file beside): \(String(format: "%.3f", used)) s CPU in 5 s")
        }
    }
}
