import Logging
import Synchronization

/// What the collector's network edge refused, cut or noticed: connection limits, deadlines, TLS and identity.
public struct CollectorEdgeStatistics: Sendable, Equatable {
    /// Streams answered `503` because `maxStreams` were open (`uplink_collector_streams_over_limit_total`).
    public var streamsOverLimit: UInt64 = 0
    /// Streams answered `403` because `Uplink-Agent` is not a name of the client certificate
    /// (`uplink_collector_identity_refused_total`).
    public var identityRefused: UInt64 = 0
    /// Connections closed because no request head (or, with TLS, no finished handshake) arrived within
    /// `requestHeadTimeout` (`uplink_collector_head_timeouts_total`).
    public var headTimeouts: UInt64 = 0
    /// Streams ended because their body brought no bytes for `streamIdleTimeout`
    /// (`uplink_collector_idle_timeouts_total`).
    public var idleTimeouts: UInt64 = 0
    /// TLS handshakes that failed: no, an expired or an untrusted client certificate, a protocol error
    /// (`uplink_collector_tls_handshake_failures_total`).
    public var tlsHandshakeFailures: UInt64 = 0
    /// Times `accept` failed for lack of file descriptors (EMFILE, ENFILE) or memory, each followed by a pause in
    /// accepting (`uplink_collector_accept_failures_total`).
    public var acceptFailures: UInt64 = 0
    /// Connections dropped right after accepting them to get out of a descriptor shortage
    /// (`uplink_collector_connections_shed_total`).
    public var connectionsShed: UInt64 = 0
    /// Streams accepted over HTTP/2 (`uplink_collector_http2_streams_total`).
    public var http2Streams: UInt64 = 0
    /// Streams accepted over TLS (`uplink_collector_tls_streams_total`).
    public var tlsStreams: UInt64 = 0

    public init() {}
}

/// Counts edge events into `CollectorEdgeStatistics` (the one place they are kept); shared by the channel handlers.
final class EdgeRecorder: Sendable {
    enum Event: CaseIterable {
        case streamOverLimit, identityRefused, headTimeout, idleTimeout, tlsHandshakeFailure, acceptFailure
        case connectionShed, http2Stream, tlsStream

        /// The series `/metrics` shows the count under.
        var seriesName: String {
            switch self {
            case .streamOverLimit: "uplink_collector_streams_over_limit_total"
            case .identityRefused: "uplink_collector_identity_refused_total"
            case .headTimeout: "uplink_collector_head_timeouts_total"
            case .idleTimeout: "uplink_collector_idle_timeouts_total"
            case .tlsHandshakeFailure: "uplink_collector_tls_handshake_failures_total"
            case .acceptFailure: "uplink_collector_accept_failures_total"
            case .connectionShed: "uplink_collector_connections_shed_total"
            case .http2Stream: "uplink_collector_http2_streams_total"
            case .tlsStream: "uplink_collector_tls_streams_total"
            }
        }

        var keyPath: WritableKeyPath<CollectorEdgeStatistics, UInt64> {
            switch self {
            case .streamOverLimit: \.streamsOverLimit
            case .identityRefused: \.identityRefused
            case .headTimeout: \.headTimeouts
            case .idleTimeout: \.idleTimeouts
            case .tlsHandshakeFailure: \.tlsHandshakeFailures
            case .acceptFailure: \.acceptFailures
            case .connectionShed: \.connectionsShed
            case .http2Stream: \.http2Streams
            case .tlsStream: \.tlsStreams
            }
        }
    }

    private let statistics = Mutex(CollectorEdgeStatistics())

    func record(_ event: Event) {
        statistics.withLock { $0[keyPath: event.keyPath] &+= 1 }
    }

    func snapshot() -> CollectorEdgeStatistics { statistics.withLock { $0 } }
}

/// Keeps a flood of connections from turning into a flood of log lines: per kind of line, a burst of `burst`
/// lines, then one every `interval`; a line that follows suppressed ones says how many were suppressed.
final class LogRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var last: ContinuousClock.Instant
        var suppressed = 0
    }
    private let buckets = Mutex<[String: Bucket]>([:])
    private let burst: Double
    private let interval: Duration

    init(burst: Int = 20, interval: Duration = .seconds(5)) {
        self.burst = Double(burst)
        self.interval = interval
    }

    /// Logs `message` unless lines of `kind` are being suppressed.
    func log(
        _ logger: Logger, _ level: Logger.Level, kind: String, _ message: @autoclosure () -> Logger.Message,
        metadata: @autoclosure () -> Logger.Metadata = [:]
    ) {
        guard logger.logLevel <= level else { return }
        let now = ContinuousClock.now
        let suppressed: Int? = buckets.withLock { buckets in
            var bucket = buckets[kind] ?? Bucket(tokens: burst, last: now)
            defer { buckets[kind] = bucket }
            bucket.tokens = min(burst, bucket.tokens + (now - bucket.last) / interval)
            bucket.last = now
            guard bucket.tokens >= 1 else {
                bucket.suppressed += 1
                return nil
            }
            bucket.tokens -= 1
            defer { bucket.suppressed = 0 }
            return bucket.suppressed
        }
        guard let suppressed else { return }
        var metadata = metadata()
        if suppressed > 0 { metadata["suppressed"] = "\(suppressed)" }
        logger.log(level: level, message(), metadata: metadata)
    }
}
