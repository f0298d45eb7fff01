import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkRemoteConfig
import UplinkTestSupport
import UplinkWire

@testable import UplinkCollector

/// A document with one source named `source`; its versions differ in their bytes.
func sourceDocument(_ source: String, version: Int) -> String {
    "sources:\n  - name: \(source)\n    type: cpu\n    interval: \(version)s\n"
}

@Suite("Remote configuration: what the collector refuses to load, and Uplink-Labels limits")
struct RemoteConfigLoadTests {
    /// The problems of loading the fixture's directory; empty when it loads.
    static func problems(_ fixture: RemoteConfigFixture) -> [String] {
        switch RemoteConfigSet.load(fixture.settings, validator: sourcesOnlyValidator) {
        case .success: return []
        case .failure(let failure): return failure.problems
        }
    }

    @Test("Empty selectors are refused at FILE:LINE:COL: match: {} and agents: [] in a rule, match: {} and labels: {} in a stage")
    func emptySelectors() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("base", tailDocument)
            try fixture.document("next", cpuDocument)
            try fixture.assignments("""
                generation: 1
                assign:
                  - {name: a, match: {}, documents: [base]}
                  - {name: b, match: {agents: []}, documents: [base]}
                  - {name: c, match: {labels: {}}, documents: [base]}
                  - name: d
                    match: {agents: ["edge-*"]}
                    documents: [next]
                    rollout:
                      previous: [base]
                      stages: [{match: {}}, {match: {labels: {}}}, {percent: 100}]

                """)
            let path = fixture.directory + "/assignments.yaml"
            let problems = Self.problems(fixture)
            #expect(problems.count == 5, "\(problems)")
            #expect(problems.contains { $0.hasPrefix("\(path):3:22: assign[0].match: an empty match would select every agent") }, "\(problems)")
            #expect(problems.contains { $0.hasPrefix("\(path):4:31: assign[1].match.agents: an empty agents list would select every agent") }, "\(problems)")
            #expect(problems.contains { $0.hasPrefix("\(path):5:31: assign[2].match.labels: an empty labels mapping would select every agent") }, "\(problems)")
            #expect(problems.contains { $0.hasPrefix("\(path):11:24: assign[3].rollout.stages[0].match: an empty match would put every agent in this stage") }, "\(problems)")
            #expect(problems.contains { $0.hasPrefix("\(path):11:46: assign[3].rollout.stages[1].match.labels: an empty labels mapping") }, "\(problems)")

            // Leaving match out still means every agent, and loads.
            try fixture.assignments("generation: 1\nassign:\n  - {name: a, documents: [base]}\n")
            #expect(Self.problems(fixture) == [])
        }
    }

    @Test("Files starting with a dot in documents/ (an editor's lock file) are ignored")
    func dotFilesIgnored() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("modbus", tailDocument)
            try fixture.assignments("generation: 1\nassign:\n  - {name: all, documents: [modbus]}\n")
            let documents = fixture.directory + "/documents"
            // Emacs' lock file: a dangling symbolic link; and a hidden document and envelope of any content.
            try FileManager.default.createSymbolicLink(atPath: documents + "/.#modbus.yaml", withDestinationPath: "user@host.1234:1")
            try "not: a document\n".write(toFile: documents + "/.modbus.yaml.swp.yaml", atomically: true, encoding: .utf8)
            try "{}".write(toFile: documents + "/.old.yaml.sig", atomically: true, encoding: .utf8)
            #expect(Self.problems(fixture) == [])
            guard case .success(let set) = RemoteConfigSet.load(fixture.settings, validator: sourcesOnlyValidator) else { return }
            #expect(Array(set.documents.keys) == ["modbus"])
        }
    }

    @Test("Two documents defining one source name are refused where one agent may get both; exclusive rules and a rollout's versions load")
    func sourceNameCollisions() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("modbus-berlin", sourceDocument("modbus", version: 1))
            try fixture.document("modbus-paris", sourceDocument("modbus", version: 2))
            try fixture.document("modbus-v3", sourceDocument("modbus", version: 3))
            try fixture.document("lab", sourceDocument("lab", version: 1))
            let path = fixture.directory + "/assignments.yaml"

            // One rule, two colliding documents: named at the second one.
            try fixture.assignments("generation: 1\nassign:\n  - {name: a, documents: [lab, modbus-berlin, modbus-paris]}\n")
            #expect(Self.problems(fixture) == [
                "\(path):3:47: assign[0].documents[2]: documents 'modbus-berlin' and 'modbus-paris' both define source 'modbus': "
                    + "an agent given both refuses them (hint: rename the source in one of them, or assign them to different agents)"
            ])

            // Two rules whose selectors can both match (one agent may have both labels), and a rollout's previous.
            try fixture.assignments("""
                generation: 1
                assign:
                  - {name: berlin, match: {labels: {site: "berlin-*"}}, documents: [modbus-berlin]}
                  - name: canary
                    match: {labels: {ring: canary}}
                    documents: [lab]
                    rollout: {previous: [modbus-paris], stages: [{percent: 10}]}

                """)
            let problems = Self.problems(fixture)
            #expect(problems.count == 1, "\(problems)")
            #expect(problems.first?.hasPrefix(
                "\(path):4:11: assign[1].name: rules 'berlin' and 'canary' can match the same agent, and their documents "
                    + "'modbus-berlin' and 'modbus-paris' both define source 'modbus'") == true, "\(problems)")

            // Exclusive selectors (literal beginnings or ends that differ, agent lists that cannot meet), and a rollout
            // whose new and previous documents define the same source (never given together): all load.
            try fixture.assignments("""
                generation: 1
                assign:
                  - {name: berlin, match: {labels: {site: "berlin-*"}}, documents: [modbus-berlin]}
                  - {name: paris, match: {labels: {site: "paris-*", ring: "*"}}, documents: [modbus-paris]}
                  - {name: edges, match: {agents: ["*-edge", "gw-?1"], labels: {site: rome}}, documents: [modbus-v3]}
                  - {name: cores, match: {agents: ["*-core", "gw-20"], labels: {site: rome}}, documents: [modbus-berlin]}
                  - name: rollout
                    match: {labels: {site: milan}}
                    documents: [modbus-v3, lab]
                    rollout: {previous: [modbus-paris, lab], stages: [{percent: 10}]}

                """)
            #expect(Self.problems(fixture) == [])
        }
    }

    @Test("Globs that no text matches both", arguments: [
        ("berlin-*", "paris-*", true), ("*-a", "*-b", true), ("edge-1", "edge-10", true), ("a", "a", false),
        ("edge-*", "edge-1", false), ("e*", "edge-?", false), ("a*", "*b", false), ("[ab]*", "c*", false),
        ("x\\*", "x*", false), ("", "*", false), ("", "x", true),
    ])
    func exclusiveGlobs(_ a: String, _ b: String, _ exclusive: Bool) {
        #expect(RemoteConfigSet.globsAreExclusive(a, b) == exclusive)
        #expect(RemoteConfigSet.globsAreExclusive(b, a) == exclusive)
        if exclusive {
            // Never a text both match, among a few that each matches.
            for text in [a, b, "berlin-1", "paris-1", "x-a", "x-b", "edge-1", "edge-10"] {
                #expect(!(fnmatch(a, text, 0) == 0 && fnmatch(b, text, 0) == 0))
            }
        }
    }

    @Test("Uplink-Labels: up to 64 labels within the limits are taken; more, a long name or value, or a space in a value are 400 with the reason")
    func labelLimits() async throws {
        try await withTemporaryDirectory { root in
            let fixture = try RemoteConfigFixture(root)
            try fixture.document("berlin", tailDocument)
            try fixture.assignments("generation: 1\nassign:\n  - {name: berlin, match: {labels: {site: \"berlin-*\"}}, documents: [berlin]}\n")
            var settings = fixture.settings
            settings.labelsFrom.insert(.agent)
            try await withRemoteCollector(remoteConfiguration(root, settings)) { _, port in
                try await withClient { client in
                    func ask(_ labels: String) async throws -> Answer {
                        try await request(client, port: port, "/v1/config", agent: "edge-1", headers: [("Uplink-Labels", labels)])
                    }
                    let many = (0..<63).map { "l\($0)=\(String(repeating: "v", count: 255))" }.joined(separator: ",")
                    #expect(try await ask("site=berlin-1," + many).status == .ok)
                    let refusals = [
                        ("site=berlin-1,l63=x," + many, "invalid Uplink-Labels header: more than 64 labels\n"),
                        ("site=berlin-1,\(String(repeating: "n", count: 64))=x", "invalid Uplink-Labels header: label name '\(String(repeating: "n", count: 63))' is not 1 to 63 of A-Z a-z 0-9 . _ -\n"),
                        ("site=berlin-1,si/te=x", "invalid Uplink-Labels header: label name 'si/te' is not 1 to 63 of A-Z a-z 0-9 . _ -\n"),
                        ("site=berlin-\(String(repeating: "1", count: 249))", "invalid Uplink-Labels header: the value of label 'site' is longer than 255 bytes\n"),
                        ("site=berlin 1", "invalid Uplink-Labels header: the value of label 'site' contains whitespace or control characters\n"),
                        ("site=a,site=b", "invalid Uplink-Labels header: label 'site' is given twice\n"),
                        ("=x", "invalid Uplink-Labels header: expected name=value,name=value\n"),
                    ]
                    for (header, reason) in refusals {
                        let answer = try await ask(header)
                        #expect(answer.status == .badRequest, "\(header)")
                        #expect(String(decoding: answer.body, as: UTF8.self) == reason)
                    }

                    // A stream with such a header keeps going, its labels left out: nothing is assigned.
                    let empty = ConfigManifest(generation: 1, documents: []).revision.prefixed
                    let refused = try await AgentConnection.open(
                        client, port: port, agent: "edge-2", epoch: "1", headers: [("Uplink-Labels", refusals[0].0)])
                    #expect(refused.response.status == .ok)
                    #expect(AckLine.parse(try #require(try await refused.nextLine())) == .resume(0))
                    #expect(ConfigHint.parse(try #require(try await refused.nextLine()))?.revision == empty)
                    #expect(refused.response.headers.first(name: "Uplink-Config").flatMap(ConfigHint.init(headerValue:))?.revision == empty)
                    refused.send(body(1...1))
                    try await refused.waitForAck(1)
                    _ = try await refused.close()
                    // One within the limits counts (labels_from: agent).
                    let connection = try await AgentConnection.open(
                        client, port: port, agent: "edge-3", epoch: "1", headers: [("Uplink-Labels", "site=berlin-2")])
                    let hint = connection.response.headers.first(name: "Uplink-Config").flatMap(ConfigHint.init(headerValue:))
                    #expect(hint?.revision != nil && hint?.revision != empty)
                    connection.finishUpload()
                    _ = try await connection.readText()
                }
            }
        }
    }
}
