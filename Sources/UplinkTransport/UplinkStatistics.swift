import UplinkWire

/// Counters of one `Uplink`, for tests, benchmarks and the status view: the one place they are kept (the agent's
/// `/metrics` reads them when scraped, as `uplink_*` series).
public struct UplinkStatistics: Sendable, Equatable {
    /// Streams the uplink started to open.
    public var connectionAttempts = 0
    /// Streams that got as far as the collector's resume line.
    public var streamsOpened = 0
    /// Streams given up (each is followed by a backoff, except during shutdown).
    public var failures = 0
    /// `failures` by kind (`StreamFailure.reason`).
    public var failuresByReason: [String: Int] = [:]
    /// Why the last stream was given up.
    public var lastFailure: StreamFailure?
    /// The text of the last non-200 answer's body, when it had one (e.g. nginx's "No required SSL certificate was
    /// sent").
    public var lastRejectionDetail: String?
    /// The backoff delays chosen, oldest first (the last 128).
    public var backoffDelays: [Duration] = []
    /// Body bytes handed to the HTTP client: what goes on the wire, compressed when `compression` is not `.none`.
    public var bytesWritten = 0
    /// Line bytes (records and heartbeats) before compression; `bytesWritten` without compression.
    public var lineBytesWritten = 0
    /// The body's encoding now: `UplinkConfiguration.compression` until a collector answered `415`, then `.none`.
    public var compression: WireCompression = .none
    /// Times the uplink fell back to an uncompressed body after a `415` (at most 1).
    public var compressionFallbacks = 0
    /// Record lines handed to the HTTP client (resent ones count again).
    public var recordsWritten = 0
    /// Times the uplink copied from the ring into the stream pair.
    public var writePasses = 0
    /// `hasSpaceAvailable` events received from the pair.
    public var spaceAvailableEvents = 0
    /// Wake-ups by the ring because new frames arrived while the uplink could write.
    public var dataAvailableEvents = 0
    /// Heartbeat lines sent.
    public var heartbeatsSent = 0
    /// Highest sequence the collector acknowledged.
    public var acknowledged: UInt64 = 0
    /// Highest sequence written to the current stream (0 before the first); `lastSent - acknowledged` frames are
    /// on their way or waiting for the collector's acknowledgement.
    public var lastSent: UInt64 = 0
    /// What the uplink is doing now.
    public var state: UplinkStreamState = .connecting
    /// When `state` began: nanoseconds since the Unix epoch (0 until the uplink runs).
    public var stateSince: Int64 = 0
    /// When the last stream was given up (`lastFailure`): nanoseconds since the Unix epoch.
    public var lastFailureTime: Int64?
}

/// What an uplink is doing, for the status view and `uplink_stream_state`.
public enum UplinkStreamState: String, Sendable, CaseIterable, Codable {
    /// Opening a connection, or waiting for the collector's response head or resume line.
    case connecting
    /// The stream is open and records flow.
    case streaming
    /// The last stream failed; waiting out the backoff before the next attempt.
    case backingOff = "backing_off"
    /// Shutting down or handing over: sending what is left and waiting for its acknowledgement.
    case draining
    /// Done: the uplink has stopped.
    case stopped
}
