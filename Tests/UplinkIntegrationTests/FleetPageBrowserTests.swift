import Foundation
import Testing
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkTestSupport

/// The collector's fleet page in a real browser: Debian's headless Chromium loads `GET /` while agents stream, and
/// the test reads the DOM the page's script rendered from `/v1/fleet`.
@Suite(
    "Fleet page in headless Chromium", .serialized, .timeLimit(.minutes(6)),
    .enabled(if: FleetBrowser.isInstalled, "needs /usr/bin/chromium (Debian package chromium)"))
struct FleetPageBrowserTests {
    @Test("Three agents, one stopped: three rows, two streaming with records and rates, one disconnected")
    func threeAgentsOneStopped() async throws {
        let collector = try await InProcessCollector(name: "fleet-page")
        let ids = ["edge-a", "edge-b", "edge-c"]
        var agents: [RunningAgent] = []
        for id in ids {
            agents.append(
                RunningAgent(url: collector.url, sources: [.generator(rate: 40, count: nil, recordBytes: 120)]) { uplink in
                    uplink.agentID = id
                })
        }
        do {
            let streaming = await eventually(timeout: .seconds(30)) {
                let seen = collector.collector.agents()
                // About two seconds of records each, so every sparkline has something to show.
                return seen.count == 3 && seen.allSatisfy { $0.connected && $0.recordsStored >= 80 }
            }
            #expect(streaming, "three agents streaming: \(collector.collector.agents().map(\.agent))")
            try await agents[2].stop()
            let stopped = await eventually(timeout: .seconds(20)) {
                collector.collector.agents().first { $0.agent == "edge-c" }?.connected == false
            }
            #expect(stopped)
            // The page's records/s comes from complete seconds: wait until the streaming agents have some.
            let rated = await eventually(timeout: .seconds(20)) {
                collector.collector.agents().filter(\.connected).allSatisfy { $0.recordsPerSecond.suffix(3).contains { $0 > 0 } }
            }
            #expect(rated)

            let dom = try await FleetBrowser.run(
                ["--virtual-time-budget=4000", "--dump-dom", "http://127.0.0.1:\(collector.port)/"], timeout: .seconds(60))
            let rows = FleetBrowser.rows(in: dom)
            #expect(rows.map(\.agent) == ids, "rows rendered: \(rows)\n\(dom.suffix(3000))")
            for row in rows {
                let expectedState = row.agent == "edge-c" ? "disconnected" : "streaming"
                #expect(row.state == expectedState, "\(row)")
                #expect((row.stored ?? 0) > 0, "\(row)")
                if expectedState == "streaming" {
                    #expect((row.rate ?? 0) > 0, "\(row)")
                    #expect(row.lagMilliseconds != nil, "\(row)")
                }
            }
            #expect(dom.contains(#"<div id="status" class="live">"#), "the page says it is live")

            // UPLINK_FLEET_SCREENSHOT keeps the screenshot where a person can look at it.
            let screenshot = try ProcessInfo.processInfo.environment["UPLINK_FLEET_SCREENSHOT"]
                ?? Harness.temporaryDirectory("fleet-shot") + "/fleet.png"
            _ = try await FleetBrowser.run(
                [
                    "--virtual-time-budget=4000", "--window-size=1280,720", "--hide-scrollbars",
                    "--screenshot=\(screenshot)", "http://127.0.0.1:\(collector.port)/",
                ], timeout: .seconds(60))
            let size = (try? FileManager.default.attributesOfItem(atPath: screenshot)[.size] as? Int) ?? 0
            #expect(size > 10_000, "screenshot at \(screenshot)")
        } catch {
            for agent in agents { try? await agent.stop() }
            try? await collector.stop()
            throw error
        }
        for agent in agents.prefix(2) { try await agent.stop() }
        try await collector.stop()
    }
}

/// Runs Debian's Chromium headless and reads what the fleet page rendered.
enum FleetBrowser {
    static let path = "/usr/bin/chromium"
    static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// One rendered row of the fleet table.
    struct Row: CustomStringConvertible {
        var agent: String
        var state: String
        var stored: UInt64?
        var rate: Double?
        var lagMilliseconds: Double?
        var description: String { "\(agent) \(state) stored=\(stored.map(String.init) ?? "-") rate=\(rate.map { "\($0)" } ?? "-")" }
    }

    /// Runs Chromium with a fresh profile (`--no-sandbox`: the tests may run as root) and returns what it printed,
    /// standard output and error together. A run that outlasts `timeout` is killed and tried once more with a new
    /// profile: a browser that hangs while starting on a loaded machine says nothing about the page, so the first
    /// hang is recorded as a warning (with what Chromium printed) and only a second one fails the test.
    static func run(_ arguments: [String], timeout: Duration) async throws -> String {
        var hung: [String] = []
        for attempt in 1...2 {
            let (output, finished) = try await runOnce(arguments, timeout: timeout)
            if finished { return output }
            hung.append("attempt \(attempt) printed:\n\(output.suffix(2000))")
            if attempt == 1 {
                Issue.record("chromium did not finish within \(timeout); trying once more. \(hung[0])", severity: .warning)
            }
        }
        throw ChildProcess.Failure(description: "chromium did not finish within \(timeout), twice.\n" + hung.joined(separator: "\n"))
    }

    /// One Chromium run: what it printed, and whether it exited by itself within `timeout`.
    private static func runOnce(_ arguments: [String], timeout: Duration) async throws -> (output: String, finished: Bool) {
        let directory = try Harness.temporaryDirectory("chromium")
        let output = directory + "/output.txt"
        // Nothing but the page may use the network: no component updates, sync, pings or crash uploads, and no
        // proxy from the environment, so a machine without internet access cannot hold the run up; and no D-Bus,
        // whose calls wait up to 25 s each for a bus daemon that is there but does not answer.
        let process = try ChildProcess(
            [
                "/usr/bin/env", "DBUS_SESSION_BUS_ADDRESS=disabled:", "DBUS_SYSTEM_BUS_ADDRESS=disabled:",
                path, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-default-apps", "--no-pings",
                "--disable-breakpad", "--no-proxy-server", "--user-data-dir=\(directory)/profile",
            ] + arguments, outputPath: output)
        let exited = await eventually(timeout: timeout) { !process.isRunning }
        if !exited { await process.terminate(grace: 2) }
        return ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "", exited)
    }

    /// The `<tr class="agent …">` rows of a dumped DOM, with the values the page put in data attributes.
    static func rows(in dom: String) -> [Row] {
        dom.components(separatedBy: #"<tr class="agent "#).dropFirst().compactMap { chunk -> Row? in
            let row = chunk.components(separatedBy: "</tr>").first ?? ""
            guard let agent = attribute("data-agent", in: row), let state = attribute("data-state", in: row) else { return nil }
            return Row(
                agent: agent, state: state, stored: attribute("data-stored", in: row).flatMap { UInt64($0) },
                rate: attribute("data-rate", in: row).flatMap { Double($0) },
                lagMilliseconds: attribute("data-lag", in: row).flatMap { Double($0) })
        }
    }

    private static func attribute(_ name: String, in text: String) -> String? {
        guard let start = text.range(of: " \(name)=\"") else { return nil }
        let rest = text[start.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }
}
