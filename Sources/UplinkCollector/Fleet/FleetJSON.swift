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
        var json = JSONObjectWriter()
        json.reserveCapacity(256 + snapshot.agents.count * 640)
        json.member("version", version)
        json.member("now_ms", milliseconds(snapshot.now))
        json.member("capacity", snapshot.capacity)
        json.member("agents_evicted", snapshot.agentsEvicted)
        json.member("history_seconds", FleetTable.historySeconds)
        json.member("agents", objects: snapshot.agents) { json, agent in
            append(agent, config: config[agent.agent], to: &json)
        }
        if let rollouts {
            json.member("rollouts", objects: rollouts) { json, rollout in
                json.member("name", rollout.name)
                json.member("stage", rollout.stage)
                json.member("halted", rollout.halted)
                json.member("reason", rollout.reason)
            }
        }
        var out = json.finish()
        out.append(UInt8(ascii: "\n"))
        return out
    }

    private static func append(_ agent: AgentActivity, config: AgentConfigStatus?, to json: inout JSONObjectWriter) {
        json.member("agent", agent.agent)
        json.member("connected", agent.connected)
        json.member("connected_since_ms", agent.connectedSince.map(milliseconds))
        json.member("last_seen_ms", milliseconds(agent.lastSeen))
        json.member("streams_opened", agent.streamsOpened)
        json.member("epoch", String(agent.epoch))
        json.member("records_stored", agent.recordsStored)
        json.member("duplicates_discarded", agent.duplicatesDiscarded)
        json.member("resent_discarded", agent.resentDiscarded)
        json.member("records_missing", agent.recordsMissing)
        json.member("rejected_lines", agent.rejectedLines)
        json.member("newest_record_ms", agent.newestRecordTime.map(milliseconds))
        json.member("tls_identity", agent.tlsIdentity)
        json.member("http_version", agent.httpVersion)
        json.member("peer", agent.peer)
        json.member("records_per_second", integers: agent.recordsPerSecond)
        // `{"desired":…,"effective":…,"lkg":…,"state":…,"error":…,"generation":…,"reported_ms":…}` or `null`.
        json.member("config", object: config.map { config in
            { json in
                let status = config.status
                json.member("desired", status.desired)
                json.member("effective", status.effective)
                json.member("lkg", status.lastKnownGood)
                json.member("state", status.state.rawValue)
                json.member("error", status.error)
                json.member("generation", status.generation)
                json.member("reported_ms", milliseconds(config.reportedAt))
            }
        })
    }

    /// Nanoseconds to whole milliseconds, rounded toward negative infinity.
    static func milliseconds(_ nanoseconds: Int64) -> Int64 {
        let (quotient, remainder) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000)
        return remainder < 0 ? quotient - 1 : quotient
    }
}
