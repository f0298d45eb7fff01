import Foundation
import Testing
import UplinkCore
import UplinkTestSupport

/// How the agent's remote configuration status reaches the collector, seen in what the agent sends through a
/// `FaultProxy`: a `config_status` line on the stream only to a collector that advertised `Uplink-Config`, again on
/// every new stream, and `POST /v1/config/status` while there is no stream.
@Suite("Remote configuration: the status the agent sends", .serialized, .timeLimit(.minutes(3)))
struct RemoteConfigStatusDeliveryTests {
    /// What the agent sent on each of its streams so far (the connections that began with `POST /v1/stream`).
    static func streams(_ proxy: FaultProxy) -> [String] {
        proxy.clientBytesByConnection.filter { $0.hasPrefix("POST /v1/stream ") }
    }

    @Test("a config_status line on every stream to a collector that advertises Uplink-Config, none to one that does not")
    func statusLineOnlyWhereTheCollectorAdvertisedIt() async throws {
        try await RemoteConfigDeliveryTests.withProxiedFleet { fleet, proxy in
            proxy.recordClientBytes()
            // Plain NDJSON on the stream, so that its lines can be read at the proxy.
            let agentFile = try String(contentsOfFile: fleet.root + "/agent.yaml", encoding: .utf8)
            try fleet.write(agentFile.replacingOccurrences(of: "uplink: { url: ", with: "uplink: { compression: none, url: "), to: "agent.yaml")
            try "app-1\n".write(toFile: fleet.root + "/logs/app.log", atomically: true, encoding: .utf8)
            try await fleet.document("logs", serial: 1, fleet.tailDocument(source: "app", file: "app.log"))
            try fleet.assign(generation: 1, ["logs"])
            let withRemoteConfig = try String(contentsOfFile: fleet.root + "/collector.yaml", encoding: .utf8)
            let withoutRemoteConfig = """
                collector:
                  listen: 127.0.0.1:\(fleet.collectorPort)
                  data_dir: \(fleet.root)/data
                  stdout: false
                """
            /// Starts the collector again with `configuration`.
            func restartCollector(_ configuration: String) async throws {
                fleet.collector!.terminate()
                await fleet.collector!.awaitExit()
                try fleet.write(configuration, to: "collector.yaml")
                try fleet.startCollector()
            }
            /// Waits for a stream that begins after the `known` ones and carries at least two records, and returns
            /// what the agent sent on it.
            func nextStream(after known: Int) async -> String? {
                var found: String?
                _ = await eventually(timeout: .seconds(60)) {
                    let streams = Self.streams(proxy)
                    guard streams.count > known, streams.last!.components(separatedBy: "\"seq\":").count > 2 else { return false }
                    found = streams.last
                    return true
                }
                return found
            }

            try fleet.startCollector()
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applied" }, "\(fleet.logs)")
            #expect(await eventually(timeout: .seconds(30)) { Self.streams(proxy).contains { $0.contains("config_status") } })

            // A collector that does not serve remote configuration: the agent has a status, but does not send it.
            var known = Self.streams(proxy).count
            try await restartCollector(withoutRemoteConfig)
            proxy.cutAllConnections()
            let plain = await nextStream(after: known)
            #expect(plain != nil, "\(fleet.logs)")
            #expect(plain?.contains("config_status") == false, "a status line went to a collector that does not read them")
            #expect(await fleet.remoteState().state == "applied", "a collector without remote configuration changes nothing")

            // One that does again: the same status goes on its first stream, and on the next one.
            known = Self.streams(proxy).count
            try await restartCollector(withRemoteConfig)
            proxy.cutAllConnections()
            for round in 1...2 {
                let stream = await nextStream(after: known)
                #expect(stream?.contains("config_status") == true, "round \(round): \(stream ?? "no stream") \(fleet.logs)")
                known = Self.streams(proxy).count
                proxy.cutAllConnections()
            }
        }
    }

    @Test("without a stream (the collector's /v1/stream refused), the agent applies what it polls and POSTs /v1/config/status")
    func statusPostedWithoutAStream() async throws {
        try await RemoteConfigDeliveryTests.withProxiedFleet { fleet, proxy in
            proxy.refuseRequests(containing: "POST /v1/stream ")
            try "app-1\n".write(toFile: fleet.root + "/logs/app.log", atomically: true, encoding: .utf8)
            try await fleet.document("logs", serial: 1, fleet.tailDocument(source: "app", file: "app.log"))
            try fleet.assign(generation: 1, ["logs"])
            try fleet.startCollector()
            // Without a stream there is no hint: a first look that finds no collector is made again only after
            // poll_interval (at least 30 s). So the collector answers before the agent starts.
            #expect(await eventually(timeout: .seconds(60)) { await fleet.collectorFleet() != nil }, "\(fleet.logs)")
            try fleet.startAgent()
            #expect(await eventually(timeout: .seconds(60)) { await fleet.remoteState().state == "applied" }, "\(fleet.logs)")
            #expect(await eventually(timeout: .seconds(30)) {
                await fleet.collectorFleet()?.contains("\"applied\"") == true
            }, "the collector has the status: \(fleet.logs)")
            #expect(proxy.requestHeads.contains { $0.hasPrefix("POST /v1/config/status ") }, "\(proxy.requestHeads)")
            #expect(proxy.requestHeads.contains { $0.hasPrefix("POST /v1/stream ") }, "the agent tried to stream")
        }
    }
}
