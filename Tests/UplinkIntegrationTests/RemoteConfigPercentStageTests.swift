import Foundation
import Testing
import UplinkCore
import UplinkRemoteConfig
import UplinkTestSupport

/// A rollout whose percent stage is active, over agent processes that reach the collector through a `FaultProxy`:
/// which agents get the new document is decided by their stable bucket, the same from one collector process to the
/// next, and the proxy's log shows that no other agent ever asked for it.
@Suite("Remote configuration: a percent stage of a rollout", .serialized, .timeLimit(.minutes(6)))
struct RemoteConfigPercentStageTests {
    /// An agent's stable bucket in a rollout as docs/remote-config.md defines it: the first 8 bytes of
    /// sha256(rollout + "\n" + agent), big-endian, mod 10 000. Written out here so that the collector's code is not
    /// its own oracle.
    static func bucket(rollout: String, agent: String) -> Int {
        let digest = SHA256Digest(of: Array((rollout + "\n" + agent).utf8))
        return Int(digest.bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 10_000)
    }

    @Test("current_stage 1 of [canary label, 55 %]: the canary and the agents whose bucket is below 5 500 run the new document, the same ones under a restarted collector; no other agent ever requests it (proxy log)")
    func percentStage() async throws {
        // Six agents at once: alone among the heavy and timed tests (CPUGate).
        try await CPUGate.exclusive { try await Self.runPercentStage() }
    }

    static func runPercentStage() async throws {
        // A 10 s probation: six debug agents and their collector starting together on two loaded cores once took
        // longer than 3 s to acknowledge a record appended after a swap, and the probation rolled two agents back.
        // The probation is not what this test is about.
        try await RemoteConfigDeliveryTests.withProxiedFleet(probation: "10s") { fleet, proxy in
            // What `fleet.labelAgents(fromInventory:)` writes, spelled out: calling it in this closure crashes Swift
            // 6.3.1's SendNonSendable pass.
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
            try fleet.write("box-04: {ring: canary}", to: "fleet/inventory.yaml")
            let ids = (1...6).map { String(format: "box-%02d", $0) }
            let inStage = Set(ids.filter { $0 == "box-04" || bucket(rollout: "lab", agent: $0) < 5_500 })
            // The ids are fixed, so this holds or fails the same every run: some agent is in by its bucket alone
            // (box-01, box-02), some is out.
            try #require(inStage.count >= 2 && inStage.count < ids.count, "\(inStage)")

            try await fleet.document("logs", serial: 1, """
                sources:
                  - { name: app, type: tail, paths: ["\(fleet.root)/logs/app.log"] }
                """)
            try await fleet.document("extra", serial: 1, """
                sources:
                  - { name: extra, type: tail, paths: ["\(fleet.root)/logs/extra.log"] }
                """)
            let extraDigest = try RemoteConfigDeliveryTests.digest(fleet, "extra")
            try fleet.assign(generation: 1, ["logs"])
            try fleet.startCollector()
            var boxes: [RemoteConfigBox] = []
            do {
                for id in ids { boxes.append(try fleet.startBox(id)) }
                for box in boxes {
                    #expect(await eventually(timeout: .seconds(60)) {
                        await fleet.remoteState(port: box.port).state == "applied"
                    }, "\(box.id): \(box.log.text)")
                }

                /// Writes the rollout as assignments of `generation`.
                func rollout(generation: Int) throws {
                    try fleet.write("""
                        generation: \(generation)
                        assign:
                          - name: lab
                            match: {agents: ["box-*"]}
                            documents: [logs, extra]
                            rollout:
                              previous: [logs]
                              stages:
                                - {match: {labels: {ring: canary}}}
                                - {percent: 55}
                              current_stage: 1
                        """, to: "fleet/assignments.yaml")
                }
                /// Whether every box runs what its stage gives it, under assignments of `generation`.
                func everyBoxRunsItsStage(generation: Int) async -> Bool {
                    for box in boxes {
                        let state = await fleet.remoteState(port: box.port)
                        let expected = inStage.contains(box.id) ? ["app", "extra", "local-load"] : ["app", "local-load"]
                        let seen = await fleet.remote("generation", port: box.port)
                        guard state.state == "applied", state.sources.sorted() == expected, seen == "\(generation)" else { return false }
                    }
                    return true
                }

                /// What each box says, for a failure's message.
                func boxStates() async -> String {
                    var lines: [String] = []
                    for box in boxes {
                        let state = await fleet.remoteState(port: box.port)
                        let generation = await fleet.remote("generation", port: box.port) ?? "-"
                        lines.append("\(box.id): \(state) generation \(generation)")
                    }
                    return lines.joined(separator: "\n")
                }

                /// Makes every box look at what the collector assigns now (a SIGHUP: the local file is read again,
                /// and the assignment fetched), whether or not its own assignment changed.
                func everyBoxLooks() {
                    for box in boxes { kill(box.process.processIdentifier, SIGHUP) }
                }

                try rollout(generation: 2)
                kill(fleet.collector!.processIdentifier, SIGHUP)
                // The stage's agents get a hint and apply; then every agent looks, so that each says what it is given.
                for box in boxes where inStage.contains(box.id) {
                    #expect(await eventually(timeout: .seconds(60)) {
                        await fleet.remoteState(port: box.port).sources.contains("extra")
                    }, "\(box.id): \(box.log.text)")
                }
                everyBoxLooks()
                let ranStage2 = await eventually(timeout: .seconds(60)) { await everyBoxRunsItsStage(generation: 2) }
                let states2 = await boxStates()
                #expect(ranStage2, "\(states2)")

                // Another collector process: the same agents.
                try rollout(generation: 3)
                fleet.collector!.terminate()
                await fleet.collector!.awaitExit()
                try fleet.startCollector()
                #expect(await eventually(timeout: .seconds(60)) { await fleet.collectorFleet() != nil })
                everyBoxLooks()
                let ranStage3 = await eventually(timeout: .seconds(60)) { await everyBoxRunsItsStage(generation: 3) }
                let states3 = await boxStates()
                #expect(ranStage3, "\(states3)")

                // Who asked for the new document and its envelope, by the Uplink-Agent of each request.
                let envelope = Array(try Data(contentsOf: URL(fileURLWithPath: fleet.root + "/fleet/documents/extra.yaml.sig")))
                let blobs = [extraDigest, SHA256Digest(of: envelope)]
                let askers = proxy.requestHeads
                    .filter { head in blobs.contains { head.hasPrefix("GET /v1/config/blobs/\($0.prefixed) ") } }
                    .map { RemoteConfigDeliveryTests.header("Uplink-Agent", in: $0) ?? "?" }
                #expect(Set(askers) == inStage, "the new document was requested by \(askers), the stage is \(inStage.sorted())")
            } catch {
                await RemoteConfigFleet.stop(boxes)
                throw error
            }
            await RemoteConfigFleet.stop(boxes)
        }
    }
}
