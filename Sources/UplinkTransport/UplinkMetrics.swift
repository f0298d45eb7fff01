import Metrics

/// The uplink's swift-metrics instruments.
struct UplinkMetrics: Sendable {
    let connectionAttempts = Counter(label: "uplink_connection_attempts_total")
    let bytesSent = Counter(label: "uplink_bytes_sent_total")
    /// Line bytes before compression (records and heartbeats); equal to `bytesSent` without compression.
    let lineBytes = Counter(label: "uplink_line_bytes_total")
    let recordsSent = Counter(label: "uplink_records_sent_total")
    let heartbeats = Counter(label: "uplink_heartbeats_total")
    let acknowledgedSequence = Gauge(label: "uplink_acknowledged_sequence")

    func failure(_ failure: StreamFailure) {
        let reason: String
        switch failure {
        case .transport: reason = "transport"
        case .status(let code): reason = "status_\(code)"
        case .responseEnded: reason = "response_ended"
        case .noResume: reason = "no_resume"
        case .ackStall: reason = "ack_stall"
        case .writeStall: reason = "write_stall"
        case .encodingRefused: reason = "encoding_refused"
        }
        Counter(label: "uplink_stream_failures_total", dimensions: [("reason", reason)]).increment()
    }
}
