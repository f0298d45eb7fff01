import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport
import UplinkWire

@testable import UplinkCollector

private func stream(_ agent: String, epoch: UInt64 = 7, subject: String? = nil, http: String = "HTTP/1.1") -> OpenStream {
    OpenStream(
        agent: agent, epoch: epoch, httpVersion: http, tls: subject != nil, tlsVersion: nil, certificateSubject: subject,
        peer: "[IPv4]127.0.0.1/127.0.0.1:4000")
}

private func agent(_ snapshot: FleetSnapshot, _ id: String) -> AgentActivity? {
    snapshot.agents.first { $0.agent == id }
}

@Suite("Fleet table")
struct FleetTableTests {
    @Test func countsConnectionsAndTimes() throws {
        let table = FleetTable()
        table.opened(stream("box-b", epoch: 3, subject: "CN=box-b,O=Example", http: "HTTP/2"), wall: 1_000)
        table.opened(stream("box-a"), wall: 1_100)
        table.received(
            agent: "box-b", FleetBatch(stored: 10, duplicates: 2, resent: 1, missing: 5, rejected: 3, newestRecordTime: 900),
            wall: 2_000, second: 4)
        table.received(agent: "box-b", FleetBatch(stored: 4, newestRecordTime: 950), wall: 2_500, second: 5)
        table.received(agent: "box-b", FleetBatch(duplicates: 1), wall: 2_600, second: 5)
        table.closed(agent: "box-a", wall: 3_000)

        let snapshot = table.snapshot(now: 4_000, second: 6)
        #expect(snapshot.now == 4_000)
        #expect(snapshot.capacity == FleetTable.defaultCapacity)
        #expect(snapshot.agents.map(\.agent) == ["box-a", "box-b"])
        let a = try #require(agent(snapshot, "box-a"))
        #expect(!a.connected && a.connectedSince == nil && a.lastSeen == 3_000)
        #expect(a.recordsStored == 0 && a.newestRecordTime == nil)
        let b = try #require(agent(snapshot, "box-b"))
        #expect(b.connected && b.connectedSince == 1_000 && b.lastSeen == 2_600)
        #expect(b.recordsStored == 14 && b.duplicatesDiscarded == 3 && b.resentDiscarded == 1)
        #expect(b.recordsMissing == 5 && b.rejectedLines == 3)
        // A batch without stored records leaves the newest record time alone.
        #expect(b.newestRecordTime == 950)
        #expect(b.tlsIdentity == "CN=box-b,O=Example" && b.httpVersion == "HTTP/2" && b.epoch == 3)
        #expect(b.peer == "127.0.0.1:4000" && b.streamsOpened == 1)
        #expect(b.recordsPerSecond.count == FleetTable.historySeconds)
        #expect(Array(b.recordsPerSecond.suffix(2)) == [10, 4])
        #expect(b.recordsPerSecond.dropLast(2).allSatisfy { $0 == 0 })
    }

    @Test func aReplacedStreamLeavesTheAgentConnected() throws {
        let table = FleetTable()
        table.opened(stream("box", epoch: 1), wall: 10)
        // The new connection opens before the old one lets go (Collector.serveStream).
        table.opened(stream("box", epoch: 2), wall: 20)
        table.closed(agent: "box", wall: 30)
        var box = try #require(agent(table.snapshot(now: 40, second: 0), "box"))
        #expect(box.connected && box.connectedSince == 20 && box.streamsOpened == 2 && box.epoch == 2)
        table.closed(agent: "box", wall: 50)
        box = try #require(agent(table.snapshot(now: 60, second: 0), "box"))
        #expect(!box.connected && box.connectedSince == nil && box.lastSeen == 50)
    }

    @Test func evictsTheDisconnectedAgentSeenLeastRecently() throws {
        let table = FleetTable(capacity: 3)
        for (index, id) in ["a", "b", "c"].enumerated() {
            table.opened(stream(id), wall: Int64(index))
            table.closed(agent: id, wall: Int64(index))
        }
        // `a` is seen again: `b` is now the one seen least recently.
        table.received(agent: "a", FleetBatch(stored: 1), wall: 10, second: 0)
        table.opened(stream("d"), wall: 11)
        var snapshot = table.snapshot(now: 12, second: 0)
        #expect(snapshot.agents.map(\.agent) == ["a", "c", "d"])
        #expect(snapshot.agentsEvicted == 1)

        // Agents with an open stream are never evicted: the table grows past its capacity while they stream.
        table.opened(stream("a"), wall: 13)
        table.opened(stream("c"), wall: 14)
        table.opened(stream("e"), wall: 15)
        snapshot = table.snapshot(now: 16, second: 0)
        #expect(snapshot.agents.map(\.agent) == ["a", "c", "d", "e"])
        #expect(snapshot.agentsEvicted == 1)
        // Once one disconnects, the next new agent takes its place.
        table.closed(agent: "c", wall: 17)
        table.opened(stream("f"), wall: 18)
        snapshot = table.snapshot(now: 19, second: 0)
        #expect(snapshot.agents.map(\.agent) == ["a", "d", "e", "f"])
        #expect(snapshot.agentsEvicted == 2)
    }

    @Test(.computeBound) func endlessNewAgentIdsStayBounded() {
        let table = FleetTable(capacity: 64)
        for index in 0..<1_000 {
            let id = "hostile-\(index)"
            table.opened(stream(id), wall: Int64(index))
            table.received(agent: id, FleetBatch(stored: 1), wall: Int64(index), second: 0)
            table.closed(agent: id, wall: Int64(index))
        }
        let snapshot = table.snapshot(now: 1_000, second: 1)
        #expect(snapshot.agents.count == 64)
        #expect(snapshot.agentsEvicted == 1_000 - 64)
        // The newest survive.
        #expect(snapshot.agents.contains { $0.agent == "hostile-999" })
        #expect(!snapshot.agents.contains { $0.agent == "hostile-0" })
    }

    @Test func countsSaturate() throws {
        let table = FleetTable()
        table.opened(stream("box"), wall: 0)
        let huge = FleetBatch(
            stored: .max - 1, duplicates: .max, resent: .max - 5, missing: .max, rejected: .max, newestRecordTime: .min)
        table.received(agent: "box", huge, wall: 1, second: 3)
        table.received(agent: "box", huge, wall: 2, second: 3)
        let box = try #require(agent(table.snapshot(now: 3, second: 4), "box"))
        #expect(box.recordsStored == .max && box.duplicatesDiscarded == .max && box.resentDiscarded == .max)
        #expect(box.recordsMissing == .max && box.rejectedLines == .max)
        #expect(box.newestRecordTime == .min)
        #expect(box.recordsPerSecond.last == .max)
    }

    @Test func perSecondHistoryMovesWithTheClock() {
        var counts = SecondCounts()
        #expect(counts.complete(4, before: 10) == [0, 0, 0, 0])
        counts.add(5, at: 7)
        counts.add(2, at: 8)
        counts.add(1, at: 8)
        counts.add(4, at: 10)
        #expect(counts.complete(4, before: 10) == [0, 5, 3, 0])
        #expect(counts.complete(4, before: 11) == [5, 3, 0, 4])
        // A late count for a second still kept is added; one older than the ring is dropped.
        counts.add(1, at: 9)
        counts.add(100, at: 10 - 64)
        #expect(counts.complete(4, before: 11) == [5, 3, 1, 4])
        // Seconds long gone read as zero, also after the ring went round.
        counts.add(6, at: 10 + 64)
        #expect(counts.complete(3, before: 75) == [0, 0, 6])
        #expect(counts.complete(2, before: 12) == [0, 0])
    }

    @Test func identitiesAndPeersAreTidied() {
        let long = String(repeating: "é", count: 600)  // 1,200 UTF-8 bytes
        let bounded = FleetTable.bounded("CN=" + long)
        #expect(bounded.utf8.count <= FleetTable.maximumIdentityBytes)
        #expect(bounded.hasPrefix("CN=éé") && bounded.hasSuffix("…"))
        #expect(FleetTable.bounded("CN=short") == "CN=short")
        #expect(FleetTable.address("[IPv4]10.0.0.1/10.0.0.1:443") == "10.0.0.1:443")
        #expect(FleetTable.address("[IPv6]::1/::1:51234") == "[::1]:51234")
        #expect(FleetTable.address("unix:/run/x") == "unix:/run/x")
    }

    @Test func storedRecordsCountAndKeepTheNewestTimeTheyBring() {
        var batch = FleetBatch()
        batch.stored(count: 3, newestRecordTime: 1_763_704_818_000_000_003)
        #expect(batch.stored == 3)
        #expect(batch.newestRecordTime == 1_763_704_818_000_000_003)
        batch.stored(count: 0, newestRecordTime: nil)
        #expect(batch.stored == 3 && batch.newestRecordTime == 1_763_704_818_000_000_003, "nothing stored keeps the time")
        var empty = FleetBatch()
        empty.stored(count: 0, newestRecordTime: nil)
        #expect(empty.stored == 0 && empty.newestRecordTime == nil)
    }
}

@Suite("Fleet JSON")
struct FleetJSONTests {
    @Test func aSnapshotIsValidJSONWithEveryKey() throws {
        var box = AgentActivity(agent: "box-1", connected: true, lastSeen: 1_763_704_818_123_456_789)
        box.connectedSince = 1_763_704_800_000_000_000
        box.epoch = 9_223_372_036_854_775_807
        box.recordsStored = .max
        box.newestRecordTime = -1
        box.tlsIdentity = "CN=\"quoted\" \\ back,O=new\nline\u{0}\u{7}é😀"
        box.httpVersion = "HTTP/2"
        box.recordsPerSecond = [1, 2, 3]
        let quiet = AgentActivity(agent: "box-2", lastSeen: 5_000_000)
        let snapshot = FleetSnapshot(now: 1_763_704_819_999_999_999, capacity: 4096, agentsEvicted: 2, agents: [box, quiet])

        let bytes = FleetJSON.render(snapshot)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(object["version"] as? Int == 1)
        #expect(object["now_ms"] as? Int64 == 1_763_704_819_999)
        #expect(object["capacity"] as? Int == 4096)
        #expect(object["agents_evicted"] as? Int == 2)
        #expect(object["history_seconds"] as? Int == FleetTable.historySeconds)
        let agents = try #require(object["agents"] as? [[String: Any]])
        #expect(agents.count == 2)
        let first = agents[0]
        #expect(first["agent"] as? String == "box-1")
        #expect(first["connected"] as? Bool == true)
        #expect(first["connected_since_ms"] as? Int64 == 1_763_704_800_000)
        #expect(first["last_seen_ms"] as? Int64 == 1_763_704_818_123)
        #expect(first["epoch"] as? String == "9223372036854775807")
        #expect((first["records_stored"] as? NSNumber)?.uint64Value == .max)
        #expect(first["newest_record_ms"] as? Int64 == -1)
        #expect(first["tls_identity"] as? String == box.tlsIdentity)
        #expect(first["http_version"] as? String == "HTTP/2")
        #expect(first["records_per_second"] as? [Int] == [1, 2, 3])
        let second = agents[1]
        #expect(second["connected"] as? Bool == false)
        #expect(second["connected_since_ms"] is NSNull)
        #expect(second["newest_record_ms"] is NSNull)
        #expect(second["tls_identity"] is NSNull)
        for key in [
            "agent", "connected", "connected_since_ms", "last_seen_ms", "streams_opened", "epoch", "records_stored",
            "duplicates_discarded", "resent_discarded", "records_missing", "rejected_lines", "newest_record_ms",
            "tls_identity", "http_version", "peer", "records_per_second",
        ] {
            #expect(first[key] != nil && second[key] != nil, "missing \(key)")
        }
    }

    @Test func millisecondsRoundDown() {
        #expect(FleetJSON.milliseconds(1_999_999) == 1)
        #expect(FleetJSON.milliseconds(-1) == -1)
        #expect(FleetJSON.milliseconds(-1_000_000) == -1)
        #expect(FleetJSON.milliseconds(Int64.min) == Int64.min / 1_000_000 - 1)
    }
}

@Suite("Fleet authorization")
struct FleetAuthorizationTests {
    private func basic(_ credentials: String) -> String {
        "Basic " + Base64.encode(Array(credentials.utf8))
    }

    @Test func acceptsTheTokenAsBearerOrBasicPassword() {
        let token = "s3cret:with:colons"
        #expect(FleetAuthorization.allows("Bearer s3cret:with:colons", token: token))
        #expect(FleetAuthorization.allows(basic("operator:" + token), token: token))
        #expect(FleetAuthorization.allows(basic(":" + token), token: token))
        #expect(FleetAuthorization.allows("basic " + Base64.encode(Array(("x:" + token).utf8)), token: token))
        // Without padding, as some clients send it.
        let unpadded = Base64.encode(Array("ab:\(token)".utf8)).replacingOccurrences(of: "=", with: "")
        #expect(FleetAuthorization.allows("Basic " + unpadded, token: token))
    }

    @Test func refusesEverythingElse() {
        let token = "s3cret"
        #expect(!FleetAuthorization.allows(nil, token: token))
        #expect(!FleetAuthorization.allows("", token: token))
        #expect(!FleetAuthorization.allows("Bearer wrong", token: token))
        #expect(!FleetAuthorization.allows("Bearer s3cret2", token: token))
        #expect(!FleetAuthorization.allows(basic("user:wrong"), token: token))
        #expect(!FleetAuthorization.allows(basic("user:s3cre"), token: token))
        // The token as the user name does not count: it is the password.
        #expect(!FleetAuthorization.allows(basic("s3cret"), token: token))
        #expect(!FleetAuthorization.allows(basic("s3cret:"), token: token))
        #expect(!FleetAuthorization.allows("Basic !!!!", token: token))
        #expect(!FleetAuthorization.allows("Basic ", token: token))
        #expect(!FleetAuthorization.allows("Digest " + Base64.encode(Array("u:s3cret".utf8)), token: token))
        #expect(!FleetAuthorization.allows("Basic\0" + Base64.encode(Array("u:s3cret".utf8)), token: token))
    }

    @Test func base64RoundTrips() {
        var state: UInt64 = 42
        for length in 0..<64 {
            let bytes = (0..<length).map { _ in
                state = state &* 6_364_136_223_846_793_005 &+ 1
                return UInt8(truncatingIfNeeded: state >> 56)
            }
            #expect(Base64.decode(Array(Base64.encode(bytes).utf8)) == bytes)
        }
        #expect(Base64.decode(Array("A".utf8)) == nil)
        #expect(Base64.decode(Array("QQ===".utf8)) == nil)
        #expect(Base64.decode(Array("Q=Q=".utf8)) == nil)
    }
}

@Suite("Fleet routes over loopback", .serialized, .timeLimit(.minutes(2)))
struct FleetRouteTests {
    private func get(_ client: HTTPClient, port: Int, _ path: String, authorization: String? = nil) async throws
        -> (status: UInt, headers: [String: String], body: String)
    {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        if let authorization { request.headers.add(name: "Authorization", value: authorization) }
        let response = try await client.execute(request, timeout: peerRequestTimeout)
        let body = try await response.body.collect(upTo: 1 << 20)
        var headers: [String: String] = [:]
        for header in response.headers { headers[header.name.lowercased()] = header.value }
        return (response.status.code, headers, String(buffer: body))
    }

    @Test func withoutATokenBothRoutesAreOpen() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { _, port in
                try await withClient { client in
                    let page = try await get(client, port: port, "/")
                    #expect(page.status == 200)
                    #expect(page.headers["content-type"] == "text/html; charset=utf-8")
                    #expect(page.headers["cache-control"] == "no-store")
                    #expect(page.body.contains("<table id=\"fleet\">"))
                    let data = try await get(client, port: port, "/v1/fleet")
                    #expect(data.status == 200)
                    #expect(data.headers["content-type"] == "application/json")
                    let object = try JSONSerialization.jsonObject(with: Data(data.body.utf8)) as? [String: Any]
                    #expect((object?["agents"] as? [Any])?.isEmpty == true)
                }
            }
        }
    }

    @Test func withATokenBearerAndBasicAreAccepted() async throws {
        let token = "fleet-token"
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory, token: token)) { _, port in
                try await withClient { client in
                    for path in ["/", "/v1/fleet"] {
                        for refused in [nil, "Bearer nope", "Basic " + Base64.encode(Array("admin:nope".utf8))] {
                            let response = try await get(client, port: port, path, authorization: refused)
                            #expect(response.status == 401, "\(path) \(refused ?? "without Authorization")")
                            #expect(response.headers["www-authenticate"] == #"Basic realm="uplink collector""#)
                        }
                        let bearer = try await get(client, port: port, path, authorization: "Bearer \(token)")
                        #expect(bearer.status == 200, "\(path) bearer")
                        let basic = try await get(
                            client, port: port, path, authorization: "Basic " + Base64.encode(Array("anyone:\(token)".utf8)))
                        #expect(basic.status == 200, "\(path) basic")
                    }
                    // /healthz stays open.
                    #expect(try await get(client, port: port, "/healthz").status == 200)
                }
            }
        }
    }

    @Test func aStreamShowsUpWithItsCounts() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory, maxLineBytes: 1024)) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "box-7", epoch: 11)
                    #expect(try await connection.nextAck() == .resume(0))
                    // A malformed line, a line too long, 1-3, 2 again (a duplicate), then 6-8 (4 and 5 missing): all
                    // before the last record, so the ack of 8 follows them, however the chunk is cut.
                    var lines = [Array("{not json".utf8), Array(repeating: UInt8(ascii: "x"), count: 2000)]
                    lines += (1...3).map { recordLine($0) } + [recordLine(2)] + (6...8).map { recordLine($0) }
                    connection.send(body(lines))
                    // The chunk may arrive in pieces: acks up to 8.
                    var acked: AckLine? = nil
                    for _ in 0..<8 where acked != .ack(8) { acked = try await connection.nextAck() }
                    #expect(acked == .ack(8))
                    var box = try #require(collector.agents().first)
                    #expect(box.agent == "box-7" && box.connected && box.epoch == 11)
                    #expect(box.httpVersion == "HTTP/1.1" && box.tlsIdentity == nil)
                    #expect(box.recordsStored == 6 && box.duplicatesDiscarded == 1 && box.recordsMissing == 2)
                    #expect(box.rejectedLines == 2 && box.resentDiscarded == 0)
                    #expect(box.newestRecordTime == 1_763_704_818_000_000_008)

                    let data = try await get(client, port: port, "/v1/fleet")
                    let object = try JSONSerialization.jsonObject(with: Data(data.body.utf8)) as? [String: Any]
                    let agents = try #require(object?["agents"] as? [[String: Any]])
                    #expect(agents.first?["records_stored"] as? Int == 6)
                    #expect(agents.first?["connected"] as? Bool == true)

                    connection.finishUpload()
                    _ = try await connection.readText()
                    let closed = await eventually { collector.agents().first?.connected == false }
                    #expect(closed)
                    box = try #require(collector.agents().first)
                    #expect(box.connectedSince == nil && box.recordsStored == 6)
                }
            }
        }
    }

}
