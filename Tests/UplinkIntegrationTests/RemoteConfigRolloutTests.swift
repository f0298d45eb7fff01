import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkRemoteConfig
import UplinkTestSupport

/// A staged rollout over a fleet of real agent processes: the canary stage alone gets the new documents, a failure
/// there halts the rollout, and no agent outside the stage ever asks for them (the log of a proxy in front of the
/// collector).
@Suite("Remote configuration: a staged rollout over 20 agents", .serialized, .timeLimit(.minutes(8)))
struct RemoteConfigRolloutTests {
    @Test("the canary stage gets the broken document first; its rollback halts the rollout; the other 18 never ask for it")
    func canaryHalts() async throws {
        // Twenty agents at once: alone among the heavy and timed tests (CPUGate).
        try await CPUGate.exclusive { try await Self.runCanaryHalts() }
    }

    static func runCanaryHalts() async throws {
        // Twenty agents reach the collector through a proxy in this test process: on a busy machine an agent's first
        // acknowledgement after the swap has taken more than the fleet's usual 3 s, and a rolled-back first set is not
        // what this test is about.
        let fleet = try await RemoteConfigFleet(probation: "10s")
        try fleet.labelAgents(fromInventory: "box-03: {ring: canary}\nbox-11: {ring: canary}")
        try await fleet.document("logs", serial: 1, """
            sources:
              - { name: app, type: tail, paths: ["\(fleet.root)/logs/app.log"] }
            """)
        try await fleet.document("probe", serial: 1, """
            sources:
              - { name: probe, type: exec, command: ["\(fleet.root)/missing-probe", "7"], interval: 1s }
            """)
        let probeDigest = SHA256Digest(of: Array(try String(contentsOfFile: fleet.root + "/fleet/documents/probe.yaml", encoding: .utf8).utf8))
        try fleet.assign(generation: 1, ["logs"])
        try fleet.startCollector()
        // Every box reaches the collector through the proxy, whose log says who asked for what.
        let proxy = FaultProxy(upstreamPort: fleet.collectorPort)
        try await proxy.start()
        try fleet.routeAgent(throughPort: proxy.port)

        var boxes: [RemoteConfigBox] = []
        func stopAll() async {
            await RemoteConfigFleet.stop(boxes)
            await fleet.stop()
            try? await proxy.stop()
        }
        do {
            for number in 1...20 {
                boxes.append(try fleet.startBox(String(format: "box-%02d", number)))
            }
            func remoteState(_ box: RemoteConfigBox) async -> String? { await fleet.remote("state", port: box.port) }
            // All run the first set. A box that rolled it back ends the wait at once (it would never say `applied`),
            // so a failure here is reported with its log instead of holding the CPU gate for minutes.
            _ = await eventually(timeout: .seconds(180)) {
                var allApplied = true
                for box in boxes {
                    switch await remoteState(box) {
                    case "applied": continue
                    case "rolled_back": return true
                    default: allApplied = false
                    }
                }
                return allApplied
            }
            for box in boxes {
                #expect(await remoteState(box) == "applied", "\(box.id): \(box.log.text)")
            }
            let previous = await fleet.remote("effective", port: boxes[0].port)
            #expect(previous != nil)

            try fleet.write("""
                generation: 2
                assign:
                  - name: lab
                    match: {agents: ["box-*"]}
                    documents: [logs, probe]
                    rollout:
                      previous: [logs]
                      stages:
                        - {match: {labels: {ring: canary}}}
                        - {percent: 100}
                      current_stage: 0
                      halt_on_failures: 1
                """, to: "fleet/assignments.yaml")
            kill(fleet.collector!.processIdentifier, SIGHUP)

            // `rolled_back` is the canary's state only until the halt reaches it: the halted rollout then serves it
            // `previous`, which it already runs, and it says `applied` again. What lasts is bad.json.
            let canaries = boxes.filter { ["box-03", "box-11"].contains($0.id) }
            func remembersBad(_ box: RemoteConfigBox) -> Bool {
                ((try? String(contentsOfFile: box.state + "/remote/bad.json", encoding: .utf8)) ?? "").contains("probe")
            }
            for box in canaries {
                let rolledBack = await eventually(timeout: .seconds(120)) {
                    remembersBad(box) && box.log.text.contains("failed its probation and was rolled back")
                }
                #expect(rolledBack, "\(box.id): \(box.log.text)")
            }
            let halted = await eventually(timeout: .seconds(60)) {
                guard let text = await fleet.collectorFleet(),
                    let fleetJSON = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
                    let rollouts = fleetJSON["rollouts"] as? [[String: Any]]
                else { return false }
                return rollouts.contains { ($0["name"] as? String) == "lab" && ($0["halted"] as? Bool) == true }
            }
            let fleetText = await fleet.collectorFleet() ?? ""
            #expect(halted, "the rollout halted: \(fleetText)")
            for box in boxes where !canaries.contains(where: { $0.id == box.id }) {
                #expect(await remoteState(box) == "applied", "\(box.id) kept the previous documents")
            }
            let askers = proxy.requestHeads
                .filter { $0.hasPrefix("GET /v1/config/blobs/\(probeDigest.prefixed) ") }
                .map { RemoteConfigDeliveryTests.header("Uplink-Agent", in: $0) ?? "?" }
            #expect(Set(askers) == Set(canaries.map(\.id)), "only the canaries ever asked for the halted document: \(askers)")
            for box in canaries {
                let back = await eventually(timeout: .seconds(60)) {
                    let state = await remoteState(box)
                    let effective = await fleet.remote("effective", port: box.port)
                    return state == "applied" && effective == previous
                }
                let state = await fleet.remoteState(port: box.port)
                #expect(back, "\(box.id) runs the rollout's previous documents again: \(state)")
            }
        } catch {
            await stopAll()
            throw error
        }
        await stopAll()
    }
}
