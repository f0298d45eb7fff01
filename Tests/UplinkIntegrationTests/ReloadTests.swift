import Foundation
import Testing
import UplinkCore

#if canImport(Glibc)
import Glibc
import UplinkTestSupport
#endif

/// `uplink run --config` reloading its file on SIGHUP: a real agent process and real collectors.
@Suite("Live reload (SIGHUP)", .serialized, .timeLimit(.minutes(5)))
struct ReloadTests {
    /// An agent configuration: a steady generator always, `extra` sources after it.
    static func configuration(url: String, stateDirectory: String, metricsPort: Int, extra: String = "") -> String {
        """
        agent:
          id: reload-agent
          state_dir: \(stateDirectory)
          metrics_listen: 127.0.0.1:\(metricsPort)
        uplink:
          url: \(url)
          backoff:
            initial: 20ms
            max: 400ms
          # The switch to the second collector is exactly-once when the first acknowledges what its stream carried
          # within the drain; past it (5 s by default) the rest is sent again to the second, as documented. The
          # collectors run in this test process, which on a loaded machine has left them unscheduled for longer.
          drain_timeout: 60s
        sources:
          - name: steady
            type: generator
            rate: 200
            record_bytes: 120
        \(extra)
        """
    }

    static let addedSource = """
          - name: added
            type: generator
            rate: 100
            record_bytes: 120
        """

    /// Generator counters of `source` stored by the collectors, in storage order.
    static func counters(_ source: String, in collectors: [InProcessCollector]) throws -> [Int] {
        try collectors.flatMap { collector in
            try Harness.storedRecords(in: collector.dataDirectory).filter { $0.record.source == source }
                .compactMap { Harness.generatorCounter($0.record) }
        }
    }

    static func storedCount(_ source: String, in collectors: [InProcessCollector]) -> Int {
        (try? counters(source, in: collectors).count) ?? 0
    }

    @Test("add a source, remove it, switch to a second collector, break the file: records keep flowing, none lost or duplicated")
    func reloadSequence() async throws {
        let first = try await InProcessCollector(name: "reload-first")
        let second = try await InProcessCollector(name: "reload-second")
        let directory = try Harness.temporaryDirectory("reload")
        let path = directory + "/agent.yaml"
        let notify = try NotifySocket(path: directory + "/notify.sock")
        let metricsPort = try FreePort.pick()
        func configuration(url: String, extra: String = "") -> String {
            Self.configuration(url: url, stateDirectory: directory, metricsPort: metricsPort, extra: extra)
        }
        /// A counter of the agent's `/metrics` without labels.
        func counter(_ name: String) -> Double? {
            guard let response = ObservabilityTests.get(metricsPort, "/metrics"), response.status == 200 else { return nil }
            return response.text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
                .flatMap { Double($0.split(separator: " ")[1]) }
        }
        try configuration(url: first.url).write(toFile: path, atomically: true, encoding: .utf8)

        let (process, log) = try UplinkBinary.start(
            ["run", "--config", path, "--log-level", "info"], environment: ["NOTIFY_SOCKET": notify.name])
        defer { if process.isRunning { process.terminate() } }
        func reloads() -> Int { log.text.components(separatedBy: "reloading the configuration").count - 1 }
        func sighup(_ text: String, expecting outcome: String) async throws {
            let before = log.text.components(separatedBy: outcome).count
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            kill(process.processIdentifier, SIGHUP)
            let done = await eventually(timeout: .seconds(30)) {
                log.text.components(separatedBy: outcome).count > before
            }
            try #require(done, "no '\(outcome)' after SIGHUP; log: \(log.text.suffix(2000))")
        }
        func waitForMore(_ source: String, than count: Int, in collectors: [InProcessCollector]) async -> Bool {
            await eventually(timeout: .seconds(30)) { Self.storedCount(source, in: collectors) > count }
        }

        #expect(await eventually(timeout: .seconds(30)) { notify.pending.contains { $0.hasPrefix("READY=1") } })
        #expect(await waitForMore("steady", than: 50, in: [first]), "log: \(log.text.suffix(2000))")

        // 1. Add a source.
        try await sighup(
            configuration(url: first.url, extra: Self.addedSource),
            expecting: "configuration reloaded")
        #expect(await waitForMore("added", than: 20, in: [first]), "log: \(log.text.suffix(2000))")
        #expect(log.text.contains("added: [\"added\"]") || log.text.contains("added=[\"added\"]"), "\(log.text.suffix(1000))")

        // 2. Remove it again: it stops producing; the steady source keeps going.
        try await sighup(configuration(url: first.url), expecting: "configuration reloaded")
        let steadyAfterRemoval = Self.storedCount("steady", in: [first])
        // 400 steady records (2 s at 200/s) after the removal was applied: every record of the removed source,
        // appended before it, has been stored by then (the ring is delivered in order).
        #expect(await waitForMore("steady", than: steadyAfterRemoval + 400, in: [first]))
        let addedStored = Self.storedCount("added", in: [first])
        #expect(addedStored > 20)

        // 3. Switch to a second collector: the first stream drains and closes, the second carries on.
        try await sighup(configuration(url: second.url), expecting: "configuration reloaded")
        #expect(await waitForMore("steady", than: 50, in: [second]), "log: \(log.text.suffix(2000))")
        let storedByFirst = first.recordsStored
        // `/metrics` counts across the hand-over: the first uplink's records and connection stay in the totals.
        // Read once, after the stored counts: a record is sent before it is stored, so the total covers both
        // collectors' records; without the first uplink's share it would fall short by hundreds.
        let storedByBoth = Double(storedByFirst + Self.storedCount("steady", in: [second]))
        let sent = counter("uplink_records_sent_total")
        #expect(sent.map { $0 >= storedByBoth } == true, "sent \(String(describing: sent)), stored \(storedByBoth)")
        #expect((counter("uplink_connection_attempts_total") ?? 0) >= 2)

        // 4. Break the file: reported with file:line:col and key, nothing changes, records keep flowing.
        let broken = configuration(url: second.url)
            .replacingOccurrences(of: "rate: 200", with: "rate: fast")
        try await sighup(broken, expecting: "not reloaded, the running configuration stays")
        let brokenLine = broken.components(separatedBy: "\n").firstIndex { $0.contains("rate: fast") }! + 1
        #expect(log.text.contains("\(path):\(brokenLine):"), "\(log.text.suffix(2000))")
        #expect(log.text.contains("sources[0].rate"))
        let steadyAtSecond = Self.storedCount("steady", in: [second])
        #expect(await waitForMore("steady", than: steadyAtSecond + 200, in: [second]))
        #expect(process.isRunning)
        #expect(reloads() == 4)

        // systemd heard of every reload: RELOADING=1 (with MONOTONIC_USEC), then READY=1.
        let notifications = notify.pending
        #expect(notifications.filter { $0.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") }.count == 4, "\(notifications)")
        #expect(notifications.filter { $0.hasPrefix("READY=1") }.count == 5, "\(notifications)")
        #expect(notifications.last?.contains("reload failed") == true, "\(notifications)")

        kill(process.processIdentifier, SIGTERM)
        #expect(await eventually(timeout: .seconds(30)) { !process.isRunning })
        await process.awaitExit()
        #expect(process.terminationStatus == 0, "log: \(log.text.suffix(2000))")

        // The first collector got nothing after the switch; the removed source nothing after its removal.
        #expect(first.recordsStored == storedByFirst)
        #expect(Self.storedCount("added", in: [first, second]) == addedStored)
        // Exactly once across both collectors: the steady source ran untouched throughout (a restart would have
        // counted from 0 again), and the removed one lost nothing it produced.
        for source in ["steady", "added"] {
            let counters = try Self.counters(source, in: [first, second])
            #expect(
                Harness.exactlyOnceProblem(counters, total: (counters.max() ?? -1) + 1) == nil,
                "\(source); the agent's log: \(log.text.suffix(3000))")
        }
        let sequences = try [first, second].flatMap { try Harness.storedRecords(in: $0.dataDirectory).map(\.sequence) }
        #expect(Set(sequences).count == sequences.count, "a sequence number was stored twice")
        try await first.stop()
        try await second.stop()
    }
}
