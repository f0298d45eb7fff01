import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import Synchronization
import Testing
import UplinkCore
import UplinkRemoteConfig
import UplinkTestSupport
import UplinkWire

@testable import UplinkCollector

/// Agents as a test plays them over HTTP: they ask for their manifest and report their state.
struct FleetAgents {
    let client: HTTPClient
    let port: Int

    /// The agent's manifest; the empty one when nothing is assigned (204).
    func manifest(_ agent: String, headers: [(String, String)] = []) async throws -> ConfigManifest {
        let answer = try await request(client, port: port, "/v1/config", agent: agent, headers: headers)
        if answer.status == .noContent { return ConfigManifest(generation: 0, documents: []) }
        #expect(answer.status == .ok)
        return try ConfigManifest(json: answer.body)
    }

    func documents(_ agent: String) async throws -> [String] {
        try await manifest(agent).documents.map(\.name)
    }

    func revision(_ agent: String) async throws -> String {
        try await manifest(agent).revision.prefixed
    }

    /// `POST /v1/config/status`, which must be taken (204).
    func report(
        _ agent: String, _ state: ConfigStatus.State, desired: String?, effective: String?, error: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        var body: [UInt8] = []
        WireLineWriter.appendConfigStatusLine(
            ConfigStatus(desired: desired, effective: effective, state: state, error: error), to: &body)
        let answer = try await request(client, port: port, "/v1/config/status", agent: agent, method: .POST, body: body)
        #expect(answer.status == .noContent, sourceLocation: sourceLocation)
    }
}

/// The canary rollout of `modbus` (stage 0: `ring: canary`; then 0 %), beside a rule `base` for every edge.
func canaryAssignments(generation: Int, base: String = "base-v1", modbus: String = "modbus-v2") -> String {
    """
    generation: \(generation)
    assign:
      - {name: base, match: {agents: ["edge-*"]}, documents: [\(base)]}
      - name: modbus
        match: {agents: ["edge-*"]}
        documents: [\(modbus)]
        rollout:
          previous: [modbus-v1]
          stages:
            - {match: {labels: {ring: canary}}}
            - {percent: 0}
          current_stage: 0

    """
}

/// A fleet directory with `base-v1`, `base-v2`, `modbus-v1` to `modbus-v3`; edge-1, edge-2 and edge-4 are canaries.
func canaryFixture(_ root: String) throws -> RemoteConfigFixture {
    let fixture = try RemoteConfigFixture(root)
    for version in 1...2 { try fixture.document("base-v\(version)", sourceDocument("base", version: version)) }
    for version in 1...3 { try fixture.document("modbus-v\(version)", sourceDocument("modbus", version: version)) }
    try fixture.inventory("edge-1: {ring: canary}\nedge-2: {ring: canary}\nedge-3: {ring: main}\nedge-4: {ring: canary}\n")
    try fixture.assignments(canaryAssignments(generation: 1))
    return fixture
}

@Suite("Remote configuration: what halts a rollout, who keeps its documents, and how long a halt lasts")
struct RemoteConfigHaltTests {
    @Test("An old rolled_back heard again (desired: an earlier revision) does not halt; a first failure of the assigned revision in the canary stage does")
    func oldFailureHeardAgain() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try canaryFixture(root)
            try await withRemoteCollector(remoteConfiguration(root, fixture.settings)) { collector, port in
                try await withClient { client in
                    let agents = FleetAgents(client: client, port: port)
                    let broken = try await agents.revision("edge-1")
                    let before = try await agents.revision("edge-3")
                    // modbus-v2 failed on edge-1 and halted the rollout; the operator's next generation assigns v3.
                    try await agents.report("edge-1", .rolledBack, desired: broken, effective: before, error: "v2 is broken")
                    #expect(collector.remoteConfigRollouts().first?.halted == true)
                    try fixture.assignments(canaryAssignments(generation: 2, modbus: "modbus-v3"))
                    #expect(try collector.reloadRemoteConfig()?.get() == 2)
                    #expect(collector.remoteConfigRollouts().first?.halted == false)
                    let fixed = try await agents.revision("edge-1")
                    #expect(try await agents.documents("edge-1") == ["base-v1", "modbus-v3"])

                    // A reconnect repeats the last status, about v2: not news, and not about what is assigned now.
                    try await agents.report("edge-1", .rolledBack, desired: broken, effective: before, error: "v2 is broken")
                    #expect(collector.remoteConfigRollouts().first?.halted == false)
                    #expect(collector.remoteConfigStatuses()["edge-1"]?.status.state == .rolledBack)
                    #expect(try await agents.documents("edge-2") == ["base-v1", "modbus-v3"])

                    // edge-2 fails v3 itself: that halts it.
                    try await agents.report("edge-2", .failed, desired: fixed, effective: before, error: "v3 is broken too")
                    let halted = try #require(collector.remoteConfigRollouts().first)
                    #expect(halted.halted && halted.reason == "edge-2: v3 is broken too")
                    #expect(try await agents.documents("edge-2") == ["base-v1", "modbus-v1"])
                }
            }
        }
    }

    @Test("A rollout at 100 % is not halted when an agent that ran its documents refuses another rule's change")
    func failureForAnotherRule() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("modbus-v1", sourceDocument("modbus", version: 1))
            try fixture.document("modbus-v2", sourceDocument("modbus", version: 2))
            try fixture.document("lab-v1", sourceDocument("lab", version: 1))
            try fixture.document("lab-v2", sourceDocument("lab", version: 2))
            func assignments(_ generation: Int, lab: String) -> String {
                """
                generation: \(generation)
                assign:
                  - name: modbus
                    match: {agents: ["edge-*"]}
                    documents: [modbus-v2]
                    rollout: {previous: [modbus-v1], stages: [{percent: 100}], current_stage: 0}
                  - {name: lab, match: {agents: ["edge-*"]}, documents: [\(lab)]}

                """
            }
            try fixture.assignments(assignments(1, lab: "lab-v1"))
            let configuration = remoteConfiguration(root, fixture.settings)
            let running = try await withRemoteCollector(configuration) { _, port in
                try await withClient { client in
                    let agents = FleetAgents(client: client, port: port)
                    let running = try await agents.revision("edge-1")
                    try await agents.report("edge-1", .applied, desired: running, effective: running)
                    return running
                }
            }
            // A restarted collector has served nothing yet: the agent's report at its stream start is what it knows.
            try await withRemoteCollector(configuration) { collector, port in
                try await withClient { client in
                    let agents = FleetAgents(client: client, port: port)
                    try await agents.report("edge-1", .applied, desired: running, effective: running)
                    try fixture.assignments(assignments(2, lab: "lab-v2"))
                    #expect(try collector.reloadRemoteConfig()?.get() == 2)
                    let changed = try await agents.revision("edge-1")
                    #expect(changed != running)
                    try await agents.report("edge-1", .failed, desired: changed, effective: running, error: "lab: refused")
                    #expect(collector.remoteConfigRollouts() == [RolloutStatus(name: "modbus", stage: 0, halted: false, reason: nil)])
                    #expect(try await agents.documents("edge-1") == ["lab-v2", "modbus-v2"])
                    #expect(collector.remoteConfigStatuses()["edge-1"]?.status.state == .failed)
                }
            }
        }
    }

    @Test("At a halt, an agent that runs the rollout's documents keeps them though another rule's documents changed since; one on probation with them does not")
    func keepAcrossOtherChanges() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try canaryFixture(root)
            try await withRemoteCollector(remoteConfiguration(root, fixture.settings)) { collector, port in
                try await withClient { client in
                    let agents = FleetAgents(client: client, port: port)
                    let first = try await agents.revision("edge-1")
                    try await agents.report("edge-1", .applied, desired: first, effective: first)
                    // edge-4 runs them too, but on probation: not proven.
                    try await agents.report("edge-4", .applying, desired: first, effective: first)
                    // base changes for everyone; edge-1 has not applied it yet when edge-2 fails the rollout.
                    try fixture.assignments(canaryAssignments(generation: 2, base: "base-v2"))
                    #expect(try collector.reloadRemoteConfig()?.get() == 2)
                    let second = try await agents.revision("edge-2")
                    #expect(try await agents.revision("edge-1") == second)
                    try await agents.report("edge-2", .rolledBack, desired: second, effective: nil, error: "modbus: refused")
                    #expect(collector.remoteConfigRollouts().first?.halted == true)
                    #expect(try await agents.documents("edge-1") == ["base-v2", "modbus-v2"])
                    #expect(try await agents.documents("edge-2") == ["base-v2", "modbus-v1"])
                    #expect(try await agents.documents("edge-3") == ["base-v2", "modbus-v1"])
                    #expect(try await agents.documents("edge-4") == ["base-v2", "modbus-v1"])
                }
            }
        }
    }

    @Test("A halt outlasts a restart on the same data_dir, with its reason and who keeps the documents; a higher generation lifts it")
    func haltOutlastsRestart() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try canaryFixture(root)
            let configuration = remoteConfiguration(root, fixture.settings)
            let saved = configuration.remoteConfigHaltsFile
            try await withRemoteCollector(configuration) { collector, port in
                try await withClient { client in
                    let agents = FleetAgents(client: client, port: port)
                    let new = try await agents.revision("edge-1")
                    try await agents.report("edge-1", .applied, desired: new, effective: new)
                    try await agents.report("edge-2", .rolledBack, desired: new, effective: nil, error: "modbus: refused")
                    #expect(collector.remoteConfigRollouts().first?.halted == true)
                }
            }
            #expect(FileManager.default.fileExists(atPath: saved))
            try await withRemoteCollector(configuration) { collector, port in
                #expect(collector.remoteConfigRollouts() == [
                    RolloutStatus(name: "modbus", stage: 0, halted: true, reason: "edge-2: modbus: refused")
                ])
                try await withClient { client in
                    let agents = FleetAgents(client: client, port: port)
                    #expect(try await agents.documents("edge-1") == ["base-v1", "modbus-v2"])
                    #expect(try await agents.documents("edge-2") == ["base-v1", "modbus-v1"])
                    // The operator's next step: a reload with a higher generation lifts it, here and for the next start.
                    try fixture.assignments(canaryAssignments(generation: 2))
                    #expect(try collector.reloadRemoteConfig()?.get() == 2)
                    #expect(collector.remoteConfigRollouts().first?.halted == false)
                    #expect(try await agents.documents("edge-2") == ["base-v1", "modbus-v2"])
                }
            }
            try await withRemoteCollector(configuration) { collector, port in
                #expect(collector.remoteConfigRollouts().first?.halted == false)
                // Halted again in generation 2; the directory is at generation 3 when the collector starts next.
                try await withClient { client in
                    let agents = FleetAgents(client: client, port: port)
                    let new = try await agents.revision("edge-2")
                    try await agents.report("edge-2", .failed, desired: new, effective: nil, error: "again")
                    #expect(collector.remoteConfigRollouts().first?.halted == true)
                }
            }
            try fixture.assignments(canaryAssignments(generation: 3))
            try await withRemoteCollector(configuration) { collector, _ in
                #expect(collector.remoteConfigRollouts().first?.halted == false)
            }
            #expect(!FileManager.default.fileExists(atPath: saved))
        }
    }

    @Test("A batch of many config_status lines on a stream: the last is the agent's state, and a failure inside it still halts")
    func statusBurstOnAStream() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try canaryFixture(root)
            try await withRemoteCollector(remoteConfiguration(root, fixture.settings)) { collector, port in
                try await withClient { client in
                    let agents = FleetAgents(client: client, port: port)
                    let new = try await agents.revision("edge-2")
                    let previous = try await agents.revision("edge-3")
                    let connection = try await AgentConnection.open(client, port: port, agent: "edge-2", epoch: 4)
                    #expect(AckLine.parse(try #require(try await connection.nextLine())) == .resume(0))
                    #expect(ConfigHint.parse(try #require(try await connection.nextLine()))?.revision == new)

                    var lines: [UInt8] = []
                    for _ in 0..<100 {
                        WireLineWriter.appendConfigStatusLine(ConfigStatus(desired: new, effective: previous, state: .applying), to: &lines)
                    }
                    WireLineWriter.appendConfigStatusLine(
                        ConfigStatus(desired: new, effective: previous, state: .rolledBack, error: "modbus: refused"), to: &lines)
                    for _ in 0..<100 {
                        WireLineWriter.appendConfigStatusLine(ConfigStatus(desired: new, effective: previous, state: .pinned), to: &lines)
                    }
                    connection.send(ByteBuffer(bytes: lines))
                    connection.send(body(1...1))
                    // The halt changed edge-2's revision back to the previous documents: the stream says so.
                    var hint: ConfigHint?
                    while hint?.revision != previous, let line = try await connection.nextLine() {
                        if let parsed = ConfigHint.parse(line) { hint = parsed }
                    }
                    #expect(hint?.revision == previous)
                    #expect(collector.remoteConfigRollouts().first?.reason == "edge-2: modbus: refused")
                    #expect(collector.remoteConfigStatuses()["edge-2"]?.status.state == .pinned)
                    #expect(collector.statistics().malformedLines == 0)
                    _ = try await connection.close()
                }
            }
        }
    }

    @Test("Reloads and halts racing: the last hint a stream is given is always the agent's revision")
    func hintsInOrder() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try canaryFixture(root)
            let service = try RemoteConfigService(settings: fixture.settings, validator: sourcesOnlyValidator, logger: testLogger)
            let delivered = Mutex<[ConfigHint]>([])
            let labels = PresentedLabels()
            let (id, first) = service.subscribe(agent: "edge-1", labels: labels) { hint in
                delivered.withLock { $0.append(hint) }
            }
            defer { service.unsubscribe(id) }
            #expect(first == service.hint(agent: "edge-1", labels: labels))
            for generation in 2...300 {
                // Each generation changes edge-1's revision; a failure of its new revision halts the rollout, which
                // changes it again. The two run at once.
                try fixture.assignments(canaryAssignments(
                    generation: generation, base: generation % 2 == 0 ? "base-v2" : "base-v1",
                    modbus: generation % 3 == 0 ? "modbus-v3" : "modbus-v2"))
                let coming = try RemoteConfigSet.load(fixture.settings, validator: sourcesOnlyValidator).get()
                let revision = ConfigManifest(
                    generation: coming.generation,
                    documents: [generation % 2 == 0 ? "base-v2" : "base-v1", generation % 3 == 0 ? "modbus-v3" : "modbus-v2"]
                        .map { coming.documents[$0]!.manifestEntry }
                ).revision.prefixed
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { _ = service.reload() }
                    group.addTask {
                        await service.record(
                            ConfigStatus(desired: revision, state: .failed, error: "refused"), agent: "edge-1", labels: labels,
                            wall: 0)
                    }
                }
                #expect(delivered.withLock { $0.last } == service.hint(agent: "edge-1", labels: labels), "generation \(generation)")
            }
        }
    }
}
