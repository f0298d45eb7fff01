import Foundation
import Testing
import UplinkTestSupport

/// The fleet page's remote-configuration parts in a real browser: the `Config` column and the rollout line, rendered
/// by the page's script from `/v1/fleet` of a collector process whose rollout an agent process halted.
@Suite(
    "Fleet page: remote configuration in headless Chromium", .serialized, .timeLimit(.minutes(3)),
    .enabled(if: FleetBrowser.isInstalled, "needs /usr/bin/chromium (Debian package chromium)"))
struct RemoteConfigFleetPageTests {
    @Test("An agent that rolled a document back: its Config cell is marked bad with the revision; the halted rollout says why")
    func rolledBackAgentAndHaltedRollout() async throws {
        try await RemoteConfigFleet.with(probation: "2s") { fleet in
            // Allowed, but there is no such program: the source fails during the probation. The rollout has no
            // `previous`, so once halted it serves the agent nothing and the agent stays `rolled_back`.
            try await fleet.document(
                "probe", serial: 1,
                "sources:\n  - { name: probe, type: exec, command: [\"\(fleet.root)/missing-probe\", \"7\"], interval: 1s }")
            try fleet.write("""
                generation: 1
                assign:
                  - name: lab
                    match: {agents: ["box-*"]}
                    documents: [probe]
                    rollout:
                      stages:
                        - {percent: 100}
                      current_stage: 0
                      halt_on_failures: 1
                """, to: "fleet/assignments.yaml")
            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "rolled_back" }, "\(fleet.logs)")
            #expect(await eventually(timeout: .seconds(30)) {
                await fleet.collectorFleet()?.contains(#""halted":true"#) == true
            }, "\(fleet.logs)")
            let desired = try #require(await fleet.remote("desired"))

            let dom = try await FleetBrowser.run(
                ["--virtual-time-budget=4000", "--dump-dom", "http://127.0.0.1:\(fleet.collectorPort)/"], timeout: .seconds(60))
            #expect(FleetBrowser.rows(in: dom).map(\.agent) == ["box-1"], "\(dom.suffix(3000))")
            let cell = try #require(Self.configCell(in: dom), "no Config cell: \(dom.suffix(3000))")
            #expect(cell.contains(#"data-state="rolled_back""#), "\(cell)")
            #expect(cell.contains(#"class="config bad""#), "a rolled-back agent is marked bad: \(cell)")
            #expect(cell.contains(">rolled back<"), "\(cell)")
            // The revision it tried, in the tooltip, with the reason.
            #expect(cell.contains("desired \(desired)"), "\(cell)")
            #expect(cell.contains("error: "), "\(cell)")
            let bounds = try #require(Self.element(id: "bounds", in: dom))
            #expect(bounds.contains("rollout lab: stage 0 (halted: box-1"), "\(bounds)")
        }
    }

    /// The `<td …>…</td>` of the Config column (the first one: one agent).
    static func configCell(in dom: String) -> String? {
        guard let label = dom.range(of: #"data-label="Config""#),
            let start = dom[..<label.lowerBound].range(of: "<td", options: .backwards),
            let end = dom[label.upperBound...].range(of: "</td>")
        else { return nil }
        return String(dom[start.lowerBound..<end.upperBound])
    }

    /// The text of the element with `id`, up to its closing tag.
    static func element(id: String, in dom: String) -> String? {
        guard let start = dom.range(of: #"id="\#(id)">"#) else { return nil }
        return String(dom[start.upperBound...].prefix { $0 != "<" })
    }
}
