/// One series family that `/metrics` serves: its name, its Prometheus type and its `# HELP` text.
public struct SeriesDefinition: Sendable, Hashable {
    public enum Kind: String, Sendable {
        case counter, gauge
    }

    public let name: String
    public let kind: Kind
    /// The `# HELP` text: docs/metrics.md's "meaning" of the series, without the backticks of its code spans.
    public let help: String

    init(_ name: String, _ kind: Kind, _ help: String) {
        self.name = name
        self.kind = kind
        self.help = help
    }
}

/// Every series the agent's and the collector's `/metrics` endpoints serve, with its help text: the one place that
/// text is written. Series read at scrape time (`MetricsExposition.counter(_:labels:)`, `registry.gauge(_:labels:)`)
/// look it up here, and so does the swift-metrics backend `MetricsExposition.bootstrap()` installs for the few
/// `Counter(label:)`s. docs/metrics.md's tables say the same, row for row (checked by
/// MetricsConventionsTests in the integration tests), in the same order as here.
public enum SeriesCatalog {
    /// The agent's series (docs/metrics.md, "Agent").
    public static let agent: [SeriesDefinition] = [
        .init("uplink_records_appended_total", .counter, "Records the source produced into the buffer."),
        .init(
            "uplink_records_dropped_total", .counter,
            "Records lost in the agent, by reason: buffer_full_drop_oldest (evicted unacknowledged to make room), "
                + "buffer_full_drop_newest (refused because the buffer was full: drop_newest, or a tailer's append "
                + "cancelled by shutdown), larger_than_buffer (a record larger than the whole buffer); with "
                + "buffer.persist also disk_budget_drop_oldest and disk_budget_drop_newest (the disk budget was full), "
                + "which have no source label."),
        .init("uplink_ring_capacity_bytes", .gauge, "Capacity of the buffer (buffer.max_bytes)."),
        .init(
            "uplink_ring_used_bytes", .gauge,
            "Bytes held in the buffer (frames not yet acknowledged, 8-byte headers included)."),
        .init(
            "uplink_ring_resident_bytes", .gauge,
            "Memory the buffer's storage holds now (its pages in RAM). It follows the backlog, not the capacity: a "
                + "chunk or two while the collector keeps up, up to buffer.max_bytes in an outage; after a burst the "
                + "pages go back once the stream has been idle for uplink.heartbeat or the rate has dropped "
                + "(buffer.max_bytes in docs/configuration.md)."),
        .init("uplink_ring_frames", .gauge, "Frames held in memory, not yet acknowledged."),
        .init("uplink_ring_unsent_frames", .gauge, "Frames not yet written to the stream."),
        .init(
            "uplink_oldest_unacknowledged_age_seconds", .gauge,
            "Age of the oldest record held and not yet acknowledged, in memory or (buffer.persist) moved to disk, from "
                + "the record's own timestamp; 0 when nothing waits. Alert on it: it is how far behind the collector is."),
        .init(
            "uplink_unacknowledged_sent_frames", .gauge,
            "Frames written to the stream and not yet acknowledged: the ack lag."),
        .init("uplink_acknowledged_sequence", .gauge, "Highest sequence number the collector acknowledged."),
        .init("uplink_stream_up", .gauge, "1 while the stream is open and records flow, else 0."),
        .init(
            "uplink_stream_state", .gauge,
            "1 for the current state, 0 for the others: connecting, streaming, backing_off, draining, stopped."),
        .init("uplink_connection_attempts_total", .counter, "Connection attempts (each governed by uplink.backoff)."),
        .init(
            "uplink_stream_failures_total", .counter,
            "Streams given up, by cause; each is followed by a reconnect: transport (refused, reset, TLS or proxy "
                + "failure), status_<code> (the collector answered e.g. 401, 503), response_ended, no_resume, "
                + "ack_stall, write_stall, encoding_refused (415: the agent falls back to an uncompressed body)."),
        .init("uplink_records_sent_total", .counter, "Record lines written to streams (resent ones count again)."),
        .init("uplink_heartbeats_total", .counter, "Heartbeat lines written."),
        .init("uplink_line_bytes_total", .counter, "Record and heartbeat line bytes before compression."),
        .init(
            "uplink_bytes_sent_total", .counter,
            "Body bytes on the wire (compressed). uplink_line_bytes_total / uplink_bytes_sent_total is the "
                + "compression ratio."),
        .init("uplink_sources_running", .gauge, "Sources whose task runs."),
        .init("uplink_sources_ended", .gauge, "Sources that returned or failed (the log says why)."),
        .init(
            "uplink_sources_failing", .gauge,
            "Running sources whose last report is a failure (a sample, a read or opening a file failed; uplink status "
                + "says why)."),
        .init(
            "uplink_remote_config_applies_total", .counter,
            "Revisions of the remote configuration the agent checked, by result: applied (passed its probation), "
                + "rolled_back (failed it), refused (a check failed before anything was applied)."),
        .init(
            "uplink_remote_config_state", .gauge,
            "1 for the remote configuration's state (disabled, idle, applying, applied, failed, rolled_back, pinned), "
                + "0 for the others; all 0 without remote_config."),
        .init(
            "uplink_remote_config_downloads_total", .counter,
            "Documents and envelopes the agent downloaded from the collector (GET /v1/config/blobs), by result: "
                + "complete (fetched from the start), resumed (a .part left by a cut resumed with Range), restarted "
                + "(the collector sent the whole blob instead of the rest), failed (not in place: a cut, a timeout, a "
                + "status, a hash mismatch; tried again at the next look). A blob already on disk is not counted."),
        .init(
            "uplink_remote_config_download_bytes_total", .counter,
            "Body bytes of those downloads written to disk (a failed attempt's too)."),
        .init("uplink_start_time_seconds", .gauge, "When the agent started (Unix time)."),
        .init("uplink_buffer_disk_bytes", .gauge, "With buffer.persist: bytes in the segment files."),
        .init(
            "uplink_buffer_disk_written_bytes_total", .counter,
            "With buffer.persist: bytes written to the segment files (0 while the collector keeps up, in spill "
                + "mode)."),
        .init(
            "uplink_buffer_disk_corrupt_total", .counter,
            "With buffer.persist: damaged regions skipped when reading the segments back."),
        .init(
            "uplink_buffer_disk_write_errors_total", .counter,
            "With buffer.persist: failed writes to the segment files."),
    ]

    /// The collector's series (docs/metrics.md, "Collector").
    public static let collector: [SeriesDefinition] = [
        .init("uplink_collector_records_stored_total", .counter, "Records stored by the primary sink."),
        .init(
            "uplink_collector_duplicates_total", .counter,
            "Records discarded because their sequence was stored before (resent after a reconnect)."),
        .init(
            "uplink_collector_resent_total", .counter,
            "Log lines discarded because their file offset was stored before (an agent restarted without seeing "
                + "their ack)."),
        .init("uplink_collector_gaps_total", .counter, "Gaps in agents' sequences."),
        .init("uplink_collector_missing_total", .counter, "Records missing in those gaps: dropped by agents."),
        .init(
            "uplink_collector_malformed_lines_total", .counter,
            "Body lines that were not records, heartbeats or acks."),
        .init("uplink_collector_too_long_lines_total", .counter, "Lines longer than max_line_bytes."),
        .init("uplink_collector_heartbeats_total", .counter, "Heartbeat lines received."),
        .init("uplink_collector_active_streams", .gauge, "Streams open now."),
        .init(
            "uplink_collector_max_streams", .gauge,
            "Concurrent streams the collector accepts (collector.max_streams)."),
        .init("uplink_collector_streams_total", .counter, "Streams accepted."),
        .init(
            "uplink_collector_streams_replaced_total", .counter,
            "Streams ended because a newer connection of the same agent arrived."),
        .init(
            "uplink_collector_streams_rejected_total", .counter,
            "Stream requests refused with a 4xx or 503, or dropped because their connection ended before the stream started."),
        .init(
            "uplink_collector_streams_over_limit_total", .counter,
            "Stream requests refused with a 503 because max_streams streams were open."),
        .init(
            "uplink_collector_identity_refused_total", .counter,
            "Streams refused because the client certificate did not match the agent id."),
        .init(
            "uplink_collector_head_timeouts_total", .counter,
            "Connections closed because the request head did not arrive in time."),
        .init(
            "uplink_collector_idle_timeouts_total", .counter,
            "Streams closed after stream_idle_timeout without a line."),
        .init("uplink_collector_tls_handshake_failures_total", .counter, "Failed or timed-out TLS handshakes."),
        .init(
            "uplink_collector_accept_failures_total", .counter,
            "accept failures (e.g. out of descriptors; accepting backs off)."),
        .init(
            "uplink_collector_connections_shed_total", .counter,
            "Connections closed at once while descriptors ran out."),
        .init("uplink_collector_http2_streams_total", .counter, "Streams served over HTTP/2."),
        .init("uplink_collector_tls_streams_total", .counter, "Streams served over TLS."),
        .init(
            "uplink_collector_sink_errors_total", .counter,
            "Failed writes to the rejects file."),
        .init(
            "uplink_collector_decompression_bombs_total", .counter,
            "Streams ended because a compressed body expanded beyond the limits."),
        .init(
            "uplink_collector_corrupt_bodies_total", .counter,
            "Streams ended because a compressed body was corrupt."),
        .init(
            "uplink_collector_agents", .gauge,
            "Agents in the fleet table (seen since start, at most 4,096: docs/fleet.md)."),
        .init("uplink_collector_agents_connected", .gauge, "Agents with an open stream."),
        .init(
            "uplink_collector_agents_evicted_total", .counter,
            "Disconnected agents dropped from the fleet table to keep it bounded."),
        .init(
            "uplink_collector_agents_without_series", .gauge,
            "Agents beyond the per-agent series limit (200): they count only in the collector-wide series."),
        .init(
            "uplink_collector_config_requests_total", .counter,
            "Answers of the remote configuration endpoints (collector.remote_config), by endpoint (manifest, blob, "
                + "status) and HTTP status code."),
        .init(
            "uplink_collector_config_agents", .gauge,
            "Agents whose last remote configuration report is in the state (applying, applied, failed, "
                + "rolled_back, pinned)."),
        .init("uplink_collector_agent_records_stored_total", .counter, "Records of the agent stored."),
        .init(
            "uplink_collector_agent_duplicates_total", .counter,
            "Records of the agent discarded as already stored."),
        .init(
            "uplink_collector_agent_resent_total", .counter,
            "Log lines of the agent discarded because their offset was stored before."),
        .init(
            "uplink_collector_agent_missing_total", .counter,
            "Records missing in the agent's gaps: what the agent dropped."),
        .init(
            "uplink_collector_agent_rejected_lines_total", .counter,
            "Lines of the agent that were malformed or too long."),
        .init("uplink_collector_agent_connected", .gauge, "1 while the agent has an open stream."),
        .init(
            "uplink_collector_agent_lag_seconds", .gauge,
            "Age of the agent's newest stored record, from its own timestamp, on the collector's clock (clock skew "
                + "between the two shows here)."),
        .init(
            "uplink_collector_sink_records_forwarded_total", .counter,
            "Records the sink's store accepted (collector.sinks)."),
        .init("uplink_collector_sink_retries_total", .counter, "Deliveries that failed and were retried."),
        .init(
            "uplink_collector_sink_dead_lettered_total", .counter,
            "Records the store refused for good (written to the dead-letter file)."),
        .init(
            "uplink_collector_sink_lost_total", .counter, "Records retention deleted before the sink had them."),
        .init(
            "uplink_collector_sink_lag_bytes", .gauge, "Bytes of the collector's log not yet delivered to the sink."),
    ]

    /// Every series, the agent's first.
    public static let all: [SeriesDefinition] = agent + collector

    private static let byName = Dictionary(all.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })

    /// The series called `name`, or nil when the catalog lacks it.
    public static func definition(_ name: String) -> SeriesDefinition? { byName[name] }

    /// The help text of `name`; empty (no `# HELP` line) for a name the catalog lacks, which the integration tests
    /// report.
    public static func help(_ name: String) -> String { byName[name]?.help ?? "" }
}
