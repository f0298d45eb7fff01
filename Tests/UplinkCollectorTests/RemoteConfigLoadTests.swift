import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkRemoteConfig
import UplinkTestSupport
import UplinkWire

@testable import UplinkCollector

@Suite("Remote configuration: what the collector refuses to load")
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
}
