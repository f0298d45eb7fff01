import Foundation
import Testing
import UplinkCore
import UplinkTestSupport

/// The tailer's fallback from inotify to polling, with real kernel limits: the agent process runs in a user namespace
/// of its own (`unshare -U -r`), where `/proc/sys/user/max_inotify_instances` and `max_inotify_watches` belong to that
/// namespace and can be lowered without touching the machine's settings (Linux ≥ 4.9; the test skips where user
/// namespaces are not allowed).
@Suite("Tail inotify fallback", .serialized, .timeLimit(.minutes(3)))
struct TailInotifyFallbackTests {
    enum Limit: String, Sendable, CaseIterable, CustomTestStringConvertible {
        /// `max_inotify_instances = 0`: `inotify_init1` fails (EMFILE) at start.
        case noInstance
        /// `max_inotify_watches = 1`: the first directory watch is added, the next fails (ENOSPC) while running.
        case oneWatch

        var instances: Int { self == .noInstance ? 0 : 128 }
        var watches: Int { self == .oneWatch ? 1 : 65_536 }
        /// What the agent's warning says.
        var warning: String {
            self == .noInstance ? "inotify is unavailable" : "the limit fs.inotify.max_user_watches is reached"
        }
        var testDescription: String { rawValue }
    }

    static let unshare = "/usr/bin/unshare"

    /// Whether this machine lets us make a user namespace and set its inotify limits.
    static func userNamespacesWork() async -> Bool {
        guard FileManager.default.isExecutableFile(atPath: unshare) else { return false }
        let done = try? await SpawnedProcess.run([unshare, "-U", "-r", "sh", "-c", "echo 1 > /proc/sys/user/max_inotify_watches"])
        return done?.status == 0
    }

    @Test("inotify out of instances or watches (real limits in a user namespace): the tailer warns, polls, and every line arrives once",
        arguments: Limit.allCases)
    func fallback(limit: Limit) async throws {
        guard await Self.userNamespacesWork() else {
            return print("user namespaces (unshare -U -r) are not available here; skipping the inotify fallback test")
        }
        let directory = try Harness.temporaryDirectory("tail-inotify-\(limit.rawValue)")
        let collector = try await InProcessCollector(name: "tail-inotify")
        let config = directory + "/agent.yaml"
        try """
            agent:
              id: inotify-agent
              state_dir: \(directory)/state
            uplink:
              url: \(collector.url)
            sources:
              - name: app
                type: tail
                paths: [\(directory)/logs/app.log*]
                start_at: beginning
                poll_interval: 50ms
                discovery_interval: 200ms
                checkpoint_interval: 200ms
            """.write(toFile: config, atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: directory + "/logs", withIntermediateDirectories: true)
        let logPath = directory + "/logs/app.log"
        var counter = 0
        let descriptor = TailEndToEndTests.openForAppend(logPath)
        TailEndToEndTests.append(descriptor, TailEndToEndTests.lines(500, from: &counter))

        let log = directory + "/agent.log"
        // The limits are set inside the namespace, then the shell becomes the agent.
        let process = try SpawnedProcess(
            [
                Self.unshare, "-U", "-r", "sh", "-c",
                "echo \(limit.instances) > /proc/sys/user/max_inotify_instances && echo \(limit.watches) > /proc/sys/user/max_inotify_watches && exec \"$@\"",
                "sh", try UplinkBinary.path(), "run", "--config", config, "--log-level", "warning",
            ], outputPath: log)

        // Lines while it runs, a rotation by rename, and a new file the glob matches: all found by polling.
        for _ in 0..<10 {
            TailEndToEndTests.append(descriptor, TailEndToEndTests.lines(100, from: &counter))
            try await Task.sleep(for: .milliseconds(20))
        }
        close(descriptor)
        #expect(rename(logPath, logPath + ".1") == 0)
        let next = TailEndToEndTests.openForAppend(logPath)
        TailEndToEndTests.append(next, TailEndToEndTests.lines(500, from: &counter))
        close(next)
        let other = TailEndToEndTests.openForAppend(logPath + "-other")
        TailEndToEndTests.append(other, TailEndToEndTests.lines(100, from: &counter))
        close(other)

        let total = counter
        let arrived = await collector.waitForStored(total, timeout: .seconds(60))
        // Anything read twice would arrive meanwhile.
        try await Task.sleep(for: .milliseconds(500))
        process.terminate()
        await process.awaitExit()
        try await collector.stop()
        let stored = try TailEndToEndTests.storedCounters(collector).map(\.counter)
        #expect(arrived, "\(stored.count) of \(total) lines")
        #expect(Harness.exactlyOnceProblem(stored, total: total) == nil)
        let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(output.contains(limit.warning), "agent output: \(output.prefix(2000))")
        #expect(output.components(separatedBy: "polling every").count - 1 == 1, "one warning: \(output.prefix(2000))")
    }
}
