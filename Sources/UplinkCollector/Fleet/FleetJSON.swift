import UplinkWire

/// The JSON form of a `FleetSnapshot`, served by `GET /v1/fleet` (docs/fleet.md describes it key by key).
///
/// Times are whole milliseconds since the Unix epoch, so a browser's numbers hold them exactly; the epoch is a
/// string for the same reason (it may exceed 2^53). Strings go through the wire writer's escaping, so a
/// certificate subject with quotes, control characters or anything else stays valid JSON.
enum FleetJSON {
    /// Version of the shape below; raised only for changes that break readers (new keys do not).
    static let version = 1

    static func render(_ snapshot: FleetSnapshot) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256 + snapshot.agents.count * 640)
        out.append(contentsOf: #"{"version":"#.utf8)
        appendNumber(version, to: &out)
        out.append(contentsOf: #","now_ms":"#.utf8)
        appendNumber(milliseconds(snapshot.now), to: &out)
        out.append(contentsOf: #","capacity":"#.utf8)
        appendNumber(snapshot.capacity, to: &out)
        out.append(contentsOf: #","agents_evicted":"#.utf8)
        appendNumber(snapshot.agentsEvicted, to: &out)
        out.append(contentsOf: #","history_seconds":"#.utf8)
        appendNumber(FleetTable.historySeconds, to: &out)
        out.append(contentsOf: #","agents":["#.utf8)
        for (index, agent) in snapshot.agents.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            append(agent, to: &out)
        }
        out.append(contentsOf: "]}\n".utf8)
        return out
    }

    private static func append(_ agent: AgentActivity, to out: inout [UInt8]) {
        out.append(contentsOf: #"{"agent":"#.utf8)
        WireLineWriter.appendJSONString(agent.agent, to: &out)
        out.append(contentsOf: #","connected":"#.utf8)
        out.append(contentsOf: (agent.connected ? "true" : "false").utf8)
        out.append(contentsOf: #","connected_since_ms":"#.utf8)
        appendOptional(agent.connectedSince.map(milliseconds), to: &out)
        out.append(contentsOf: #","last_seen_ms":"#.utf8)
        appendNumber(milliseconds(agent.lastSeen), to: &out)
        out.append(contentsOf: #","streams_opened":"#.utf8)
        appendNumber(agent.streamsOpened, to: &out)
        out.append(contentsOf: #","epoch":"#.utf8)
        WireLineWriter.appendJSONString(String(agent.epoch), to: &out)
        out.append(contentsOf: #","records_stored":"#.utf8)
        appendNumber(agent.recordsStored, to: &out)
        out.append(contentsOf: #","duplicates_discarded":"#.utf8)
        appendNumber(agent.duplicatesDiscarded, to: &out)
        out.append(contentsOf: #","resent_discarded":"#.utf8)
        appendNumber(agent.resentDiscarded, to: &out)
        out.append(contentsOf: #","records_missing":"#.utf8)
        appendNumber(agent.recordsMissing, to: &out)
        out.append(contentsOf: #","rejected_lines":"#.utf8)
        appendNumber(agent.rejectedLines, to: &out)
        out.append(contentsOf: #","newest_record_ms":"#.utf8)
        appendOptional(agent.newestRecordTime.map(milliseconds), to: &out)
        out.append(contentsOf: #","tls_identity":"#.utf8)
        appendOptional(agent.tlsIdentity, to: &out)
        out.append(contentsOf: #","http_version":"#.utf8)
        appendOptional(agent.httpVersion, to: &out)
        out.append(contentsOf: #","peer":"#.utf8)
        appendOptional(agent.peer, to: &out)
        out.append(contentsOf: #","records_per_second":["#.utf8)
        for (index, count) in agent.recordsPerSecond.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendNumber(count, to: &out)
        }
        out.append(contentsOf: "]}".utf8)
    }

    /// Nanoseconds to whole milliseconds, rounded toward negative infinity.
    static func milliseconds(_ nanoseconds: Int64) -> Int64 {
        let (quotient, remainder) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000)
        return remainder < 0 ? quotient - 1 : quotient
    }

    private static func appendNumber<Number: BinaryInteger>(_ value: Number, to out: inout [UInt8]) {
        out.append(contentsOf: String(value).utf8)
    }

    private static func appendOptional(_ value: Int64?, to out: inout [UInt8]) {
        guard let value else { return out.append(contentsOf: "null".utf8) }
        appendNumber(value, to: &out)
    }

    private static func appendOptional(_ value: String?, to out: inout [UInt8]) {
        guard let value else { return out.append(contentsOf: "null".utf8) }
        WireLineWriter.appendJSONString(value, to: &out)
    }
}
