import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkTestSupport

/// What operators see of remote configuration: a remote sensor's health, the line `uplink status` prints, and the
/// collector's series about the requests it answered and the states agents reported.
@Suite("Remote configuration: status and metrics", .serialized, .timeLimit(.minutes(2)))
struct RemoteConfigObservabilityTests {
    /// The health the agent reports for source `name` (`/v1/status`), nil while it does not answer or has no such source.
    static func health(of name: String, _ fleet: RemoteConfigFleet) async -> String? {
        let sources = await fleet.agentStatus()?["sources"] as? [[String: Any]] ?? []
        return sources.first { $0["name"] as? String == name }?["health"] as? String
    }

    /// The collector's `/metrics` text, empty while it does not answer.
    static func collectorMetrics(_ fleet: RemoteConfigFleet) async -> String {
        guard let response = try? await fleet.client.execute(
            HTTPClientRequest(url: "http://127.0.0.1:\(fleet.collectorPort)/metrics"), timeout: peerRequestTimeout),
            let body = try? await response.body.collect(upTo: 4 << 20)
        else { return "" }
        return String(buffer: body)
    }

    /// Whether `metrics` has a sample of `name` whose labels include every one of `labels` (`key="value"`), above 0.
    static func hasSample(_ metrics: String, _ name: String, _ labels: [String]) -> Bool {
        metrics.split(separator: "\n").contains { line in
            line.hasPrefix(name + "{") && labels.allSatisfy { line.contains($0) }
                && (Double(line.split(separator: " ").last ?? "") ?? 0) > 0
        }
    }

    @Test("a remote cpu sensor reports healthy after its first sample; `uplink status` prints the remote line; the collector counts config requests and agents by state")
    func statusAndMetrics() async throws {
        try await RemoteConfigFleet.with(probation: "3s") { fleet in
            let agentFile = try String(contentsOfFile: fleet.root + "/agent.yaml", encoding: .utf8)
            try fleet.write(agentFile.replacingOccurrences(of: "source_types: [tail, exec]", with: "source_types: [tail, exec, cpu]"), to: "agent.yaml")
            try await fleet.document("sensors", serial: 1, """
                sources:
                  - { name: remote-cpu, type: cpu, interval: 1s }
                """)
            try fleet.assign(generation: 1, ["sensors"])
            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applied" }, "\(fleet.logs)")
            #expect(await eventually(timeout: .seconds(30)) { await Self.health(of: "remote-cpu", fleet) == "healthy" }, "\(fleet.logs)")

            let effective = try #require(await fleet.remote("effective"))
            let status = try await UplinkBinary.run(["status", "--address", "127.0.0.1:\(fleet.agentPort)"])
            #expect(status.status == 0, "\(status.standardError)")
            let revision = String(effective.dropFirst("sha256:".count).prefix(12))
            #expect(status.standardOutput.contains("config   remote applied, runs \(revision) (generation 1)"), "\(status.standardOutput)")

            // The manifest and the two blobs were answered 200; the agent's `applied` arrived.
            // Counters only grow: polled, so one answer slowed by a busy machine is not a failure.
            var metrics = ""
            let answered = await eventually(timeout: .seconds(30)) {
                metrics = await Self.collectorMetrics(fleet)
                return !metrics.isEmpty
            }
            #expect(answered, "the collector's /metrics answered")
            #expect(Self.hasSample(metrics, "uplink_collector_config_requests_total", [#"endpoint="manifest""#, #"code="200""#]), "\(metrics)")
            #expect(Self.hasSample(metrics, "uplink_collector_config_requests_total", [#"endpoint="blob""#, #"code="200""#]), "\(metrics)")
            let reported = await eventually(timeout: .seconds(30)) {
                Self.hasSample(await Self.collectorMetrics(fleet), "uplink_collector_config_agents", [#"state="applied""#])
            }
            let latest = await Self.collectorMetrics(fleet)
            #expect(reported, "\(latest)")
        }
    }
}
