import UplinkWire

/// Why a stream was given up. Every case leads to a reconnect after a backoff; `isConfigurationProblem` ones back
/// off at the longest delay and are logged as errors, since retrying sooner cannot help.
public enum StreamFailure: Sendable, Equatable, CustomStringConvertible {
    /// Connect failed, the connection was reset or closed, or the HTTP exchange broke; the text says how.
    case transport(String)
    /// The collector answered with a status other than 200.
    case status(Int)
    /// The collector ended its response.
    case responseEnded
    /// No response head or resume line within the stall timeout after connecting.
    case noResume
    /// Records were outstanding and no ack came within the stall timeout.
    case ackStall
    /// The stream had no room for the stall timeout.
    case writeStall
    /// The collector answered `415` to the body's `Content-Encoding`; the uplink now sends uncompressed bodies.
    case encodingRefused(WireCompression)

    /// The failure's kind as `uplink_stream_failures_total`'s `reason` label and `UplinkStatistics.failuresByReason`'s
    /// key: `transport`, `status_<code>`, `response_ended`, `no_resume`, `ack_stall`, `write_stall`,
    /// `encoding_refused`.
    public var reason: String {
        switch self {
        case .transport: "transport"
        case .status(let code): "status_\(code)"
        case .responseEnded: "response_ended"
        case .noResume: "no_resume"
        case .ackStall: "ack_stall"
        case .writeStall: "write_stall"
        case .encodingRefused: "encoding_refused"
        }
    }

    /// 4xx answers: wrong URL, token or headers. Retrying soon cannot succeed.
    public var isConfigurationProblem: Bool {
        if case .status(let code) = self { return (400..<500).contains(code) }
        return false
    }

    public var description: String {
        switch self {
        case .transport(let text): "connection failed: \(text)"
        case .status(let code): "collector answered HTTP \(code)"
        case .responseEnded: "collector ended the stream"
        case .noResume: "no response from the collector within the stall timeout"
        case .ackStall: "no acknowledgement within the stall timeout while records were outstanding"
        case .writeStall: "stream accepted no data within the stall timeout"
        case .encodingRefused(let encoding):
            "collector does not accept Content-Encoding \(encoding) (HTTP 415); falling back to an uncompressed body"
        }
    }
}
