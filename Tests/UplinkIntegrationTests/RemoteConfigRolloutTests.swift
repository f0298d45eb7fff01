import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkRemoteConfig
import UplinkTestSupport

/// A staged rollout over a fleet of real agent processes: the canary stage alone gets the new documents, a failure
/// there halts the rollout, and no agent outside the stage ever downloads them.
@Suite("Remote configuration: a staged rollout over 20 agents", .serialized, .timeLimit(.minutes(5)))
struct RemoteConfigRolloutTests {
    struct Box {
        let id: String
        let port: Int
        let state: String
        let process: Process
        let log: OutputCollector
    }

    @Test("the canary stage gets the broken document first; its rollback halts the rollout; the other 18 never fetch it")
    func canaryHalts() async throws {
        let fleet = try RemoteConfigFleet()
        try fleet.write("""
            collector:
              listen: 127.0.0.1:\(fleet.collectorPort)
              data_dir: \(fleet.root)/data
              stdout: false
              remote_config:
                dir: \(fleet.root)/fleet
                trusted_keys: [\(fleet.root)/keys/ops.pub]
                labels_from: [inventory]
            """, to: "collector.yaml")
        try fleet.write("box-03: {ring: canary}\nbox-11: {ring: canary}", to: "fleet/inventory.yaml")
        try fleet.document("logs", serial: 1, """
            sources:
              - { name: app, type: tail, paths: ["\(fleet.root)/logs/app.log"] }
            """)
        try fleet.document("probe", serial: 1, """
            sources:
              - { name: probe, type: exec, command: ["\(fleet.root)/missing-probe", "7"], interval: 1s }
            """)
        let probeDigest = SHA256Digest(of: Array(try String(contentsOfFile: fleet.root + "/fleet/documents/probe.yaml", encoding: .utf8).utf8))
        try fleet.assign(generation: 1, ["logs"])
        try fleet.startCollector()

        var boxes: [Box] = []
        func stopAll() async {
            for box in boxes where box.process.isRunning { box.process.terminate() }
            for box in boxes { box.process.waitUntilExit() }
            await fleet.stop()
        }
        do {
            for number in 1...20 {
                let id = String(format: "box-%02d", number)
                let port = try FreePort.pick()
                let state = fleet.root + "/state-\(id)"
                let agentConfig = try String(contentsOfFile: fleet.root + "/agent.yaml", encoding: .utf8)
                    .replacingOccurrences(of: "id: box-1, state_dir: \(fleet.root)/state, metrics_listen: \"127.0.0.1:\(fleet.agentPort)\"",
                                          with: "id: \(id), state_dir: \(state), metrics_listen: \"127.0.0.1:\(port)\"")
                #expect(agentConfig.contains("id: \(id)"))
                try fleet.write(agentConfig, to: "agent-\(id).yaml")
                let (process, log) = try fleet.start(["run", "--config", fleet.root + "/agent-\(id).yaml"])
                boxes.append(Box(id: id, port: port, state: state, process: process, log: log))
            }
            func remoteStatus(_ box: Box) async -> [String: Any]? {
                guard let response = try? await fleet.client.execute(
                    HTTPClientRequest(url: "http://127.0.0.1:\(box.port)/v1/status"), timeout: .seconds(5)),
                    let body = try? await response.body.collect(upTo: 1 << 20),
                    let status = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
                else { return nil }
                return status["remote_config"] as? [String: Any]
            }
            func remoteState(_ box: Box) async -> String? { await remoteStatus(box)?["state"] as? String }
            for box in boxes {
                #expect(await eventually(timeout: .seconds(120)) { await remoteState(box) == "applied" }, "\(box.id): \(box.log.text)")
            }
            let previous = await remoteStatus(boxes[0])?["effective"] as? String
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
            func remembersBad(_ box: Box) -> Bool {
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
                let blobs = (try? FileManager.default.contentsOfDirectory(atPath: box.state + "/remote/blobs")) ?? []
                #expect(!blobs.contains { $0.hasPrefix(probeDigest.hex) }, "\(box.id) never downloaded the halted document")
            }
            for box in canaries {
                let back = await eventually(timeout: .seconds(60)) {
                    guard let status = await remoteStatus(box) else { return false }
                    return status["state"] as? String == "applied" && status["effective"] as? String == previous
                }
                let status = await remoteStatus(box)
                #expect(back, "\(box.id) runs the rollout's previous documents again: \(String(describing: status))")
            }
        } catch {
            await stopAll()
            throw error
        }
        await stopAll()
    }
}
