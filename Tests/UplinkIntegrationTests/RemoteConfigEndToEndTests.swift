import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport

/// Remote configuration end to end, as operators run it: keys and envelopes made with `uplink config`, a collector
/// process serving a directory, an agent process applying what it is assigned, probation, rollback.
@Suite("Remote configuration: collector to agent", .serialized, .timeLimit(.minutes(4)))
struct RemoteConfigEndToEndTests {
    @Test("a signed document is applied from a hint and kept; a broken one is rolled back and remembered as bad")
    func applyAndRollBack() async throws {
        try await RemoteConfigFleet.with { fleet in
            let logFile = fleet.root + "/logs/app.log"
            try (1...5).map { "line-\($0)" }.joined(separator: "\n").appending("\n").write(toFile: logFile, atomically: true, encoding: .utf8)
            try await fleet.document("logs", serial: 1, fleet.tailDocument(source: "app", file: "app.log"))
            try await fleet.document("probe", serial: 1, """
                sources:
                  - { name: probe, type: exec, command: ["\(fleet.root)/missing-probe", "7"], interval: 1s }
                """)
            try fleet.assign(generation: 1, ["logs"])
            try fleet.startCollector()
            try fleet.startAgent()
            // Applied, on probation, kept: the remote tail's lines arrive and the set is the last-known-good.
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applied" }, "\(fleet.logs)")
            #expect(await eventually(timeout: .seconds(30)) { fleet.storedMessages(source: "app").count == 5 }, "\(fleet.logs)")
            #expect(FileManager.default.fileExists(atPath: fleet.root + "/state/remote/current"))
            #expect(await fleet.remoteState().sources.sorted() == ["app", "local-load"])
            let metrics = try await fleet.client.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(fleet.agentPort)/metrics"), timeout: peerRequestTimeout
            ).body.collect(upTo: 1 << 20)
            #expect(String(buffer: metrics).contains(#"uplink_remote_config_state{state="applied"} 1"#))
            // One document and its envelope, each fetched whole.
            #expect(String(buffer: metrics).contains(#"uplink_remote_config_downloads_total{result="complete"} 2"#))
            #expect(String(buffer: metrics).contains(#"uplink_remote_config_downloads_total{result="resumed"} 0"#))

            // A new assignment with a broken exec: the hint brings it, probation fails, the previous set runs again.
            try fleet.assign(generation: 2, ["logs", "probe"])
            kill(fleet.collector!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "rolled_back" }, "\(fleet.logs)")
            let rolledBack = await fleet.remoteState()
            #expect(rolledBack.error?.contains("probe") == true, "\(rolledBack)")
            #expect(rolledBack.sources.sorted() == ["app", "local-load"], "the last-known-good runs again")
            #expect(!fleet.agentStopped(source: "app"), "the unchanged tail source was never restarted")
            let counted = try await fleet.client.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(fleet.agentPort)/metrics"), timeout: peerRequestTimeout
            ).body.collect(upTo: 1 << 20)
            #expect(String(buffer: counted).contains(#"uplink_remote_config_applies_total{result="rolled_back"} 1"#))
            #expect(String(buffer: counted).contains(#"uplink_remote_config_applies_total{result="applied"} 1"#))
            let bad = (try? String(contentsOfFile: fleet.root + "/state/remote/bad.json", encoding: .utf8)) ?? ""
            #expect(bad.contains("probe"), "the reason is remembered: \(bad)")

            // Lines written all along are stored once each: the tail kept its checkpoint through both swaps.
            let handle = try #require(FileHandle(forWritingAtPath: logFile))
            handle.seekToEndOfFile()
            handle.write(Data("line-6\n".utf8))
            try handle.close()
            #expect(await eventually(timeout: .seconds(30)) { fleet.storedMessages(source: "app").count == 6 }, "\(fleet.logs)")
            #expect(fleet.storedMessages(source: "app") == (1...6).map { "line-\($0)" })

            // The collector heard how it went (POST /v1/config/status).
            #expect(await eventually(timeout: .seconds(30)) { await fleet.collectorFleet()?.contains("rolled_back") == true }, "\(fleet.logs)")
        }
    }
}

extension RemoteConfigEndToEndTests {
    @Test("a kill at a random moment of the probation: the next start runs the last-known-good, or the new set when it had passed; a revision that was on probation at a kill is never tried again; pin stops remote sources")
    func killDuringProbation() async throws {
        try await RemoteConfigFleet.with(probation: "3s") { fleet in
            let logFile = fleet.root + "/logs/app.log"
            try "line-1\n".write(toFile: logFile, atomically: true, encoding: .utf8)
            try await fleet.document("logs", serial: 1, fleet.tailDocument(source: "app", file: "app.log"))
            try fleet.assign(generation: 1, ["logs"])
            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(120)) { await fleet.remoteState().state == "applied" }, "\(fleet.logs)")
            let currentLink = fleet.root + "/state/remote/current"
            var lastKnownGood = try FileManager.default.destinationOfSymbolicLink(atPath: currentLink)
            var lastKnownGoodSources = ["app", "local-load"]
            // The whole log of every agent process, to count how often each revision was put on probation.
            var processLogs: [String] = []
            var killedOnProbation = 0
            var rolledBack: [String] = []
            // Runs, bounded: each assigns a new revision (a second tail source, a new serial), kills the agent at a
            // random moment from the start of that revision's probation (3 s) to a little past its end (where it has
            // just passed, or is passing), and starts it again as systemd would.
            var generator = SystemRandomNumberGenerator()
            for run in 1...20 {
                let running = try #require(await fleet.remote("effective"), "run \(run)")
                try await fleet.document("extra", serial: run, """
                    sources:
                      - { name: extra-\(run), type: tail, paths: ["\(fleet.root)/logs/extra.log"] }
                    """)
                try fleet.assign(generation: 1 + run, ["logs", "extra"])
                kill(fleet.collector!.processIdentifier, SIGHUP)
                // The new revision on probation; a poll held up for longer than the probation (a loaded machine) may
                // first see it applied, and the kill then comes after it passed, a case the loop checks too.
                #expect(await eventually(timeout: .seconds(30)) { await fleet.runsOnProbationOrApplied(other: running) },
                    "run \(run): \(fleet.logs)")
                let trying = try #require(await fleet.remote("desired"), "run \(run)")
                // The status says `applying` before the sources are swapped, the log line that counts a probation below
                // comes after: the kill waits for it, or one landing in between would leave the probation unlogged.
                #expect(await eventually(timeout: .seconds(30)) { fleet.agentLoggedProbation(of: trying) }, "run \(run): \(fleet.logs)")
                // The moment of the kill, measured in what the agent does: after a random number of its local-load
                // samples stored (one a second: 4 is past the end of a 3 s probation), then a random number of status
                // round trips (spread within that second).
                let samples = Int.random(in: 0...4, using: &generator)
                let roundTrips = Int.random(in: 0..<50, using: &generator)
                let storedBefore = fleet.storedSamples(source: "local-load")
                #expect(await eventually(timeout: .seconds(30)) { fleet.storedSamples(source: "local-load") >= storedBefore + samples })
                for _ in 0..<roundTrips { _ = await fleet.agentStatus() }
                kill(fleet.agent!.processIdentifier, SIGKILL)
                await fleet.agent!.awaitExit()
                processLogs.append(fleet.agentLog?.text ?? "")
                try fleet.startAgent()
                let what = "run \(run), killed after \(samples) samples and \(roundTrips) round trips into the probation of \(trying)"
                #expect(await eventually(timeout: .seconds(30)) {
                    let state = await fleet.remoteState().state
                    let desired = await fleet.remote("desired")
                    return (state == "rolled_back" || state == "applied") && desired == trying
                }, "\(what): \(fleet.logs)")
                let state = await fleet.remoteState()
                let bad = (try? String(contentsOfFile: fleet.root + "/state/remote/bad.json", encoding: .utf8)) ?? ""
                let current = try FileManager.default.destinationOfSymbolicLink(atPath: currentLink)
                let hex = String(trying.dropFirst("sha256:".count))
                if state.state == "rolled_back" {
                    // Killed before the probation passed (or it failed by itself first): remembered as bad on disk,
                    // which is what keeps it from being tried again until a new serial; the last-known-good runs.
                    if state.error?.contains("stopped during the probation") == true { killedOnProbation += 1 }
                    rolledBack.append(hex)
                    #expect(bad.contains(hex), "\(what): not in bad.json: \(bad)")
                    #expect(current == lastKnownGood, "\(what)")
                    #expect(state.sources.sorted() == lastKnownGoodSources, "\(what): the last-known-good runs")
                } else {
                    // Killed once it had passed: it is the last-known-good, and nothing marks it bad.
                    #expect(!bad.contains(hex), "\(what): passed, yet in bad.json: \(bad)")
                    #expect(current != lastKnownGood && current.contains(hex), "\(what): current -> \(current)")
                    #expect(state.sources.sorted() == ["app", "extra-\(run)", "local-load"], "\(what): \(state)")
                    lastKnownGood = current
                    lastKnownGoodSources = ["app", "extra-\(run)", "local-load"]
                }
            }
            // Most kills land inside the probation; at least one must, or the test did not test that.
            #expect(killedOnProbation > 0, "no kill landed inside a probation")
            #expect(fleet.storedMessages(source: "app") == ["line-1"], "each start resumed the tail from its checkpoint")

            // Break glass: pin, reload: the remote sources stop; unpin, reload: the assignment is applied again.
            #expect(try await UplinkBinary.run(["config", "pin", "--config", fleet.root + "/agent.yaml"]).status == 0)
            kill(fleet.agent!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(30)) {
                let state = await fleet.remoteState()
                return state.state == "pinned" && state.sources == ["local-load"]
            }, "\(fleet.logs)")
            #expect(try await UplinkBinary.run(["config", "unpin", "--config", fleet.root + "/agent.yaml"]).status == 0)
            try fleet.assign(generation: 100, ["logs"])
            kill(fleet.collector!.processIdentifier, SIGHUP)
            kill(fleet.agent!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(60)) {
                let state = await fleet.remoteState()
                return state.state == "applying" && state.sources.sorted() == ["app", "local-load"]
            }, "\(fleet.logs)")

            // Never tried again: over every process's log, each revision rolled back went on probation once, whatever
            // the restarts, reloads and looks that came after.
            processLogs.append(fleet.agentLog?.text ?? "")
            let probationStarts = processLogs.flatMap { $0.split(separator: "\n") }
                .filter { $0.contains("remote configuration applied; on probation") }
                .compactMap { line in line.firstRange(of: "revision=sha256:").map { String(line[$0.upperBound...].prefix(64)) } }
            #expect(probationStarts.count >= 21, "\(probationStarts.count) probations logged")
            for hex in rolledBack {
                #expect(probationStarts.count { $0 == hex } == 1, "\(hex) went on probation \(probationStarts.count { $0 == hex }) times")
            }
        }
    }
}

extension RemoteConfigEndToEndTests {
    @Test("the collector away during probation: no rollback (the acknowledgement is skipped), the status arrives after it is back")
    func collectorDownDuringProbation() async throws {
        try await RemoteConfigFleet.with(probation: "5s") { fleet in
            let logFile = fleet.root + "/logs/app.log"
            try "line-1\n".write(toFile: logFile, atomically: true, encoding: .utf8)
            try await fleet.document("logs", serial: 1, fleet.tailDocument(source: "app", file: "app.log"))
            try fleet.assign(generation: 1, ["logs"])
            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applying" }, "\(fleet.logs)")
            fleet.collector!.terminate()
            await fleet.collector!.awaitExit()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applied" }, "\(fleet.logs)")
            #expect(FileManager.default.fileExists(atPath: fleet.root + "/state/remote/current"))
            try fleet.startCollector()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.collectorFleet()?.contains("\"applied\"") == true }, "\(fleet.logs)")
            #expect(await eventually(timeout: .seconds(30)) { fleet.storedMessages(source: "app") == ["line-1"] }, "\(fleet.logs)")
        }
    }
}

extension RemoteConfigEndToEndTests {
    @Test("documents the box refuses leave what runs untouched: an untrusted key; an exec outside allow.exec never runs")
    func refusedDocuments() async throws {
        // A collector that does not check signatures: the box is what refuses.
        try await RemoteConfigFleet.with(collectorRequiresSignature: false) { fleet in
            #expect(try await UplinkBinary.run(["config", "keygen", "--out", fleet.root + "/keys/rogue"]).status == 0)
            let marker = fleet.root + "/exec-ran"
            try await fleet.document("rogue", serial: 1, key: "rogue", """
                sources:
                  - { name: other, type: tail, paths: ["\(fleet.root)/logs/other.log"] }
                """)
            try fleet.assign(generation: 1, ["rogue"])
            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "failed" }, "\(fleet.logs)")
            var state = await fleet.remoteState()
            #expect(state.error?.contains("signed with key 'rogue', which is not in remote_config.trusted_keys") == true, "\(state)")
            #expect(state.sources == ["local-load"])

            // Signed by the trusted key, but the command line is not the one allow.exec names (one argument more).
            try await fleet.document("probe", serial: 1, """
                sources:
                  - { name: probe, type: exec, command: ["\(fleet.root)/missing-probe", "1", "2"], interval: 1s }
                  - { name: touch, type: exec, command: [/usr/bin/touch, "\(marker)"], interval: 1s }
                """)
            try fleet.assign(generation: 2, ["probe"])
            kill(fleet.collector!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(60)) {
                await fleet.remoteState().error?.contains("remote_config.allow.exec") == true
            }, "\(fleet.logs)")
            state = await fleet.remoteState()
            #expect(state.state == "failed" && state.sources == ["local-load"], "\(state)")
            #expect(!FileManager.default.fileExists(atPath: marker), "no process of a refused document was started")
            #expect(!FileManager.default.fileExists(atPath: fleet.root + "/state/remote/current"), "nothing became last-known-good")
        }
    }
}

extension RemoteConfigEndToEndTests {
    @Test("an unsigned document from a collector with require_signature false: refused by a box that requires signatures, applied once it does not")
    func unsignedDocument() async throws {
        try await RemoteConfigFleet.with(probation: "2s", collectorRequiresSignature: false) { fleet in
            let logFile = fleet.root + "/logs/app.log"
            try "line-1\n".write(toFile: logFile, atomically: true, encoding: .utf8)
            // No `uplink config sign`: the collector serves it without an envelope.
            try fleet.write(fleet.tailDocument(source: "app", file: "app.log"), to: "fleet/documents/logs.yaml")
            try fleet.assign(generation: 1, ["logs"])
            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "failed" }, "\(fleet.logs)")
            let refused = await fleet.remoteState()
            #expect(refused.error?.contains("the collector serves it without an envelope (unsigned), and remote_config.require_signature is true") == true, "\(refused)")
            #expect(refused.sources == ["local-load"])
            // The collector heard why.
            #expect(await eventually(timeout: .seconds(30)) {
                await fleet.collectorFleet()?.contains("without an envelope") == true
            }, "\(fleet.logs)")

            // The box's own file says unsigned documents are fine: a reload, and it is applied.
            let path = fleet.root + "/agent.yaml"
            let agentFile = try String(contentsOfFile: path, encoding: .utf8)
            try agentFile.replacingOccurrences(of: "  enabled: true\n", with: "  enabled: true\n  require_signature: false\n")
                .write(toFile: path, atomically: true, encoding: .utf8)
            kill(fleet.agent!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applied" }, "\(fleet.logs)")
            #expect(await fleet.remoteState().sources.sorted() == ["app", "local-load"])
            #expect(await eventually(timeout: .seconds(30)) { fleet.storedMessages(source: "app") == ["line-1"] }, "\(fleet.logs)")
            let set = fleet.root + "/state/remote/current"
            #expect(FileManager.default.fileExists(atPath: set + "/logs.yaml"))
            #expect(!FileManager.default.fileExists(atPath: set + "/logs.yaml.sig"))
        }
    }
}

extension RemoteConfigEndToEndTests {
    @Test("a clean stop during probation is inconclusive: after the start the same revision is tried again, not marked bad")
    func cleanStopDuringProbation() async throws {
        try await RemoteConfigFleet.with(probation: "30s") { fleet in
            try await fleet.document("logs", serial: 1, """
                sources:
                  - { name: app, type: tail, paths: ["\(fleet.root)/logs/app.log"] }
                """)
            try fleet.assign(generation: 1, ["logs"])
            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applying" }, "\(fleet.logs)")
            fleet.agent!.terminate()
            await fleet.agent!.awaitExit()
            #expect(fleet.agent!.terminationStatus == 0)
            let trial = (try? String(contentsOfFile: fleet.root + "/state/remote/trial.json", encoding: .utf8)) ?? ""
            #expect(trial.contains("true"), "the marker says the stop was clean: \(trial)")
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) {
                let state = await fleet.remoteState()
                return state.state == "applying" && state.sources.sorted() == ["app", "local-load"]
            }, "\(fleet.logs)")
            let bad = (try? String(contentsOfFile: fleet.root + "/state/remote/bad.json", encoding: .utf8)) ?? ""
            #expect(!bad.contains("probation"), "not remembered as bad: \(bad)")
        }
    }
}

extension RemoteConfigEndToEndTests {
    @Test("one process, agent and embedded collector: a SIGHUP reloads both the file and the served directory")
    func embeddedCollectorReload() async throws {
        try await RemoteConfigFleet.with { fleet in
            let agentFile = try String(contentsOfFile: fleet.root + "/agent.yaml", encoding: .utf8)
                .replacingOccurrences(of: "uplink: { url: \"http://127.0.0.1:\(fleet.collectorPort)\" }", with: "uplink: { url: embedded }")
            let collectorFile = try String(contentsOfFile: fleet.root + "/collector.yaml", encoding: .utf8)
            try fleet.write(agentFile + collectorFile, to: "embedded.yaml")
            try await fleet.document("logs", serial: 1, """
                sources:
                  - { name: app, type: tail, paths: ["\(fleet.root)/logs/app.log"] }
                """)
            try fleet.write("generation: 1\nassign: []", to: "fleet/assignments.yaml")
            (fleet.agent, fleet.agentLog) = try fleet.start(["run", "--config", fleet.root + "/embedded.yaml"])
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "idle" }, "\(fleet.logs)")
            try fleet.assign(generation: 2, ["logs"])
            kill(fleet.agent!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(60)) {
                let state = await fleet.remoteState()
                return state.state == "applied" && state.sources.sorted() == ["app", "local-load"]
            }, "\(fleet.logs)")
        }
    }
}

extension RemoteConfigEndToEndTests {
    @Test("a pin during a long probation takes effect within seconds, not at its end; unpin tries the revision again, not marked bad")
    func pinDuringProbation() async throws {
        // An hour of probation: anything that waited for its end would time out below.
        try await RemoteConfigFleet.with(probation: "1h") { fleet in
            try await fleet.startWithAppLog()
            #expect(await eventually(timeout: .seconds(60)) {
                let state = await fleet.remoteState()
                return state.state == "applying" && state.sources.sorted() == ["app", "local-load"]
            }, "\(fleet.logs)")
            let trying = try #require(await fleet.remote("desired"))

            #expect(try await UplinkBinary.run(["config", "pin", "--config", fleet.root + "/agent.yaml"]).status == 0)
            kill(fleet.agent!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(30)) {
                let state = await fleet.remoteState()
                return state.state == "pinned" && state.sources == ["local-load"]
            }, "\(fleet.logs)")
            #expect(fleet.agentLog?.text.contains("probation interrupted") == true, "\(fleet.logs)")
            #expect(!FileManager.default.fileExists(atPath: fleet.root + "/state/remote/trial.json"))

            #expect(try await UplinkBinary.run(["config", "unpin", "--config", fleet.root + "/agent.yaml"]).status == 0)
            kill(fleet.agent!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(30)) {
                let state = await fleet.remoteState()
                return state.state == "applying" && state.sources.sorted() == ["app", "local-load"]
            }, "\(fleet.logs)")
            #expect(await fleet.remote("desired") == trying)
            let bad = (try? String(contentsOfFile: fleet.root + "/state/remote/bad.json", encoding: .utf8)) ?? ""
            #expect(!bad.contains(String(trying.dropFirst("sha256:".count))), "an interrupted probation marked it bad: \(bad)")
        }
    }
}

extension RemoteConfigEndToEndTests {
    @Test("remote_config turned on by a reload applies the assignment; off again stops the remote sources and the looks")
    func enabledByReload() async throws {
        try await RemoteConfigFleet.with { fleet in
            try "line-1\n".write(toFile: fleet.root + "/logs/app.log", atomically: true, encoding: .utf8)
            try await fleet.document("logs", serial: 1, fleet.tailDocument(source: "app", file: "app.log"))
            try fleet.assign(generation: 1, ["logs"])
            let on = try String(contentsOfFile: fleet.root + "/agent.yaml", encoding: .utf8)
            let off = on.replacingOccurrences(of: "  enabled: true", with: "  enabled: false")
            try fleet.write(off, to: "agent.yaml")
            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().sources == ["local-load"] }, "\(fleet.logs)")
            #expect(await fleet.remoteState().state == nil, "no remote_config in the status while it is off")

            try fleet.write(on, to: "agent.yaml")
            kill(fleet.agent!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(60)) {
                let state = await fleet.remoteState()
                return state.state == "applied" && state.sources.sorted() == ["app", "local-load"]
            }, "\(fleet.logs)")
            #expect(await eventually(timeout: .seconds(30)) { fleet.storedMessages(source: "app") == ["line-1"] }, "\(fleet.logs)")

            try fleet.write(off, to: "agent.yaml")
            kill(fleet.agent!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(30)) {
                let state = await fleet.remoteState()
                return state.state == nil && state.sources == ["local-load"]
            }, "\(fleet.logs)")
            // The collector is told (on the stream), not left showing the set that ran.
            #expect(await eventually(timeout: .seconds(30)) { await fleet.collectorFleet()?.contains("\"disabled\"") == true }, "\(fleet.logs)")
            // What was applied stays on disk for when it is turned on again.
            #expect(FileManager.default.fileExists(atPath: fleet.root + "/state/remote/current"))
        }
    }
}

extension RemoteConfigEndToEndTests {
    @Test("a collector that takes labels from agents (labels_from: agent) assigns by the box's own labels: manifest, blobs and status carry them")
    func assignedByAgentLabels() async throws {
        try await RemoteConfigFleet.with { fleet in
            try fleet.write(fleet.collectorConfiguration(remoteConfig: ["labels_from: [agent]"]), to: "collector.yaml")
            try "line-1\n".write(toFile: fleet.root + "/logs/app.log", atomically: true, encoding: .utf8)
            try await fleet.document("logs", serial: 1, fleet.tailDocument(source: "app", file: "app.log"))
            // Only by label: the box says `site: lab` (agent.yaml).
            try fleet.write(
                "generation: 1\nassign:\n  - {name: lab, match: {labels: {site: lab}}, documents: [logs]}", to: "fleet/assignments.yaml")
            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) {
                let state = await fleet.remoteState()
                return state.state == "applied" && state.sources.sorted() == ["app", "local-load"]
            }, "\(fleet.logs)")
            #expect(await eventually(timeout: .seconds(30)) { fleet.storedMessages(source: "app") == ["line-1"] }, "\(fleet.logs)")
            #expect(await eventually(timeout: .seconds(30)) { await fleet.collectorFleet()?.contains("\"applied\"") == true }, "\(fleet.logs)")
        }
    }

    @Test("a reload that still allows the set on probation lets the probation go on to pass; it is not restarted")
    func reloadDuringProbationThatAllowsTheSet() async throws {
        try await RemoteConfigFleet.with(probation: "4s") { fleet in
            try await fleet.startWithAppLog()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applying" }, "\(fleet.logs)")
            // A local change that has nothing to do with the remote set.
            let text = try String(contentsOfFile: fleet.root + "/agent.yaml", encoding: .utf8)
            try fleet.write(text.replacingOccurrences(of: "type: load, interval: 1s", with: "type: load, interval: 2s"), to: "agent.yaml")
            kill(fleet.agent!.processIdentifier, SIGHUP)
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applied" }, "\(fleet.logs)")
            let log = fleet.agentLog?.text ?? ""
            #expect(log.contains("reloading the configuration") || log.contains("reload"), "\(fleet.logs)")
            #expect(!log.contains("probation interrupted"), "\(fleet.logs)")
            #expect(log.components(separatedBy: "remote configuration applied; on probation").count - 1 == 1, "\(fleet.logs)")
        }
    }
}
