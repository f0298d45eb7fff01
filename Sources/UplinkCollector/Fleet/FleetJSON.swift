import UplinkWire

/// The JSON form of a `FleetSnapshot`, served by `GET /v1/fleet` (docs/fleet.md describes it key by key).
///
/// Times are whole milliseconds since the Unix epoch, so a browser's numbers hold them exactly; the epoch is a
/// string for the same reason (it may exceed 2^53). Strings go through the wire writer's escaping, so a
/// certificate subject with quotes, control characters or anything else stays valid JSON.
enum FleetJSON {
    /// Version of the shape below; raised only for changes that break readers (new keys do not).
    static let version = 1

    /// `config`: each agent's last remote configuration report (`null` without one); `rollouts`: the served
    /// rollouts, or nil without `collector.remote_config` (the key is then left out).
    static func render(
        _ snapshot: FleetSnapshot, config: [String: AgentConfigStatus] = [:], rollouts: [RolloutStatus]? = nil
    ) -> [UInt8] {
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
            append(agent, config: config[agent.agent], to: &out)
        }
        out.append(UInt8(ascii: "]"))
        if let rollouts {
            out.append(contentsOf: #","rollouts":["#.utf8)
            for (index, rollout) in rollouts.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: #"{"name":"#.utf8)
                WireLineWriter.appendJSONString(rollout.name, to: &out)
                out.append(contentsOf: #","stage":"#.utf8)
                appendNumber(rollout.stage, to: &out)
                out.append(contentsOf: #","halted":"#.utf8)
                out.append(contentsOf: (rollout.halted ? "true" : "false").utf8)
                out.append(contentsOf: #","reason":"#.utf8)
                appendOptional(rollout.reason, to: &out)
                out.append(UInt8(ascii: "}"))
            }
            out.append(UInt8(ascii: "]"))
        }
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    /// `{"desired":…,"effective":…,"lkg":…,"state":…,"error":…,"generation":…,"reported_ms":…}` or `null`.
    private static func append(_ config: AgentConfigStatus?, to out: inout [UInt8]) {
        guard let config else { return out.append(contentsOf: "null".utf8) }
        let status = config.status
        out.append(contentsOf: #"{"desired":"#.utf8)
        appendOptional(status.desired, to: &out)
        out.append(contentsOf: #","effective":"#.utf8)
        appendOptional(status.effective, to: &out)
        out.append(contentsOf: #","lkg":"#.utf8)
        appendOptional(status.lastKnownGood, to: &out)
        out.append(contentsOf: #","state":"#.utf8)
        WireLineWriter.appendJSONString(status.state.rawValue, to: &out)
        out.append(contentsOf: #","error":"#.utf8)
        appendOptional(status.error, to: &out)
        out.append(contentsOf: #","generation":"#.utf8)
        if let generation = status.generation { appendNumber(generation, to: &out) } else { out.append(contentsOf: "null".utf8) }
        out.append(contentsOf: #","reported_ms":"#.utf8)
        appendNumber(milliseconds(config.reportedAt), to: &out)
        out.append(UInt8(ascii: "}"))
    }

    private static func append(_ agent: AgentActivity, config: AgentConfigStatus?, to out: inout [UInt8]) {
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
        out.append(contentsOf: #"],"config":"#.utf8)
        append(config, to: &out)
        out.append(UInt8(ascii: "}"))
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
