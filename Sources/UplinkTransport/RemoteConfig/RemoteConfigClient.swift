import AsyncHTTPClient
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import UplinkCore
import UplinkRemoteConfig
import UplinkWire

/// The agent's client of the collector's remote configuration: the manifest (`GET /v1/config`) and the
/// content-addressed blobs it names (`GET /v1/config/blobs/sha256:<hex>`, resumable, see `downloadBlob`).
///
/// It reaches the collector the way the uplink does (`uplink.url`, TLS and mTLS with certificates read again when they
/// change, the proxy, the token, the `Uplink-Agent` header) with a client of its own, because its requests have a read
/// timeout and a deadline and the stream's must not. It makes one request per call: no retries, no polling; the
/// caller decides when to ask again (a hint line, the poll interval). Call `shutdown()` when done (AsyncHTTPClient
/// requires it before the client is released).
public final class RemoteConfigClient: Sendable {
    /// How long a request may take. Every remote configuration request is small (a manifest is at most 64 KiB, a
    /// document at most `remote_config.max_document_bytes`), so a collector that stops answering is given up on.
    public struct Timeouts: Sendable, Equatable {
        /// Connection establishment: TCP, the proxy's `CONNECT` and the TLS handshake. Default 5 s.
        public var connect: Duration
        /// The longest pause between two reads of the answer (head or body). Default 30 s.
        public var readIdle: Duration
        /// The whole request, body included (a body trickling in a byte at a time ends here), measured on the
        /// client's clock. Default 5 min.
        public var request: Duration

        public init(
            connect: Duration = UplinkConfiguration.defaultConnectTimeout, readIdle: Duration = .seconds(30),
            request: Duration = .seconds(300)
        ) {
            self.connect = connect
            self.readIdle = readIdle
            self.request = request
        }
    }

    /// What `GET /v1/config` answered.
    public enum ManifestResult: Sendable, Equatable {
        /// `304`: the manifest named by `previousETag` is still the one assigned.
        case notModified
        /// `200`: the assigned manifest, with the response's `ETag` (for the next `If-None-Match`).
        case manifest(ConfigManifest, etag: String?)
        /// `204`: nothing is assigned to this agent. Never a reason to remove running remote sources.
        case nothingAssigned
        /// `404`: the collector has no remote configuration (an older collector, or none configured). Nothing changes.
        case unsupported
        /// No usable answer (no connection, a timeout, a `5xx`, a `401`/`403`, a manifest that does not parse or is
        /// too large): try again later. Nothing changes.
        case failed(String)
    }

    /// The uplink settings requests are made with: `url`, `agentID`, `token`, `tls`, `proxy`.
    public let uplink: UplinkConfiguration
    /// `remote_config.labels`, sent as `Uplink-Labels: k=v,k=v` (sorted by key) with every request.
    public let labels: [String: String]
    public let timeouts: Timeouts
    /// How long a connection is kept for the next request: less than a collector's default `request_head_timeout`
    /// (10 s), after which the collector closes a kept-alive connection. A request sent on a connection the collector
    /// is closing fails (`remoteConnectionClosed`) and the look with it; looks are minutes apart, so little is reused.
    public static let idleConnectionTimeout: Duration = .seconds(5)
    /// What `timeouts.request` is measured on.
    let clock: any Clock<Duration>
    let client: HTTPClient
    let logger: Logger
    private let tlsReloader: TLSReloader?

    /// - Parameters:
    ///   - clock: what `timeouts.request` is measured on (tests advance a manual one). The connect and read-idle
    ///     timeouts are the HTTP client's, on its event loop.
    ///   - eventLoopGroup: where the client's connections live (the agent passes its uplink's loop).
    public init(
        uplink: UplinkConfiguration, labels: [String: String] = [:], timeouts: Timeouts = Timeouts(), logger: Logger,
        clock: any Clock<Duration>,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.uplink = uplink
        self.labels = labels
        self.timeouts = timeouts
        self.logger = logger
        self.clock = clock
        var configuration = Uplink.clientConfiguration(uplink)
        configuration.timeout = .init(connect: TimeAmount(timeouts.connect), read: TimeAmount(timeouts.readIdle))
        configuration.connectionPool.idleTimeout = TimeAmount(Self.idleConnectionTimeout)
        client = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: configuration)
        tlsReloader = uplink.usesTLS ? TLSReloader(settings: uplink.tls, logger: logger) : nil
    }

    /// Shuts the HTTP client down (required before the client is released).
    public func shutdown() async throws {
        try await client.shutdown()
    }

    /// Asks for the manifest assigned to this agent. With `previousETag` (the last `.manifest`'s) the collector
    /// answers `304` while it is unchanged. The body is read up to `ConfigManifest.maximumBytes`; a longer one is given
    /// up on while it streams.
    public func fetchManifest(previousETag: String?) async -> ManifestResult {
        do {
            return try await withinRequestDeadline { await self.requestManifest(previousETag: previousETag) }
        } catch is RequestDeadlineExceeded {
            return .failed(RequestDeadlineExceeded.description(timeouts.request))
        } catch {
            return .failed("cancelled")
        }
    }

    private func requestManifest(previousETag: String?) async -> ManifestResult {
        var extra = HTTPHeaders()
        if let previousETag { extra.add(name: "If-None-Match", value: previousETag) }
        let response: HTTPClientResponse
        do {
            response = try await execute(path: "/v1/config", headers: extra)
        } catch {
            return .failed(error.description)
        }
        switch response.status.code {
        case 200:
            let body: ByteBuffer
            do {
                body = try await response.body.collect(upTo: ConfigManifest.maximumBytes)
            } catch is NIOTooManyBytesError {
                return .failed("the manifest is larger than \(ConfigManifest.maximumBytes) bytes")
            } catch {
                return .failed("reading the manifest: \(describe(error))")
            }
            do {
                let manifest = try ConfigManifest(json: Array(body.readableBytesView))
                return .manifest(manifest, etag: response.headers.first(name: "ETag"))
            } catch {
                return .failed("the manifest is invalid: \(error)")
            }
        case 304:
            guard previousETag != nil else { return .failed("the collector answered 304 to a request without If-None-Match") }
            return .notModified
        case 204:
            return .nothingAssigned
        case 404:
            return .unsupported
        default:
            let detail = await Self.detail(of: response)
            return .failed("the collector answered \(response.status.code)" + (detail.map { ": \($0)" } ?? ""))
        }
    }

    /// A failed request, described for the log and the status.
    public struct RequestFailure: Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Reports where this agent's remote configuration stands (`POST /v1/config/status`, the body a `config_status`
    /// line). Whether the collector took it (`2xx`); the caller reports again later when not.
    public func reportStatus(_ status: ConfigStatus) async -> Bool {
        var body: [UInt8] = []
        WireLineWriter.appendConfigStatusLine(status, to: &body)
        var extra = HTTPHeaders()
        extra.add(name: "Content-Type", value: "application/json")
        do {
            let response = try await execute(path: "/v1/config/status", method: .POST, headers: extra, body: body)
            _ = try? await response.body.collect(upTo: RejectionDetail.maximumBytes)
            return (200..<300).contains(response.status.code)
        } catch {
            logger.debug("cannot report the remote configuration status", metadata: ["reason": "\(error)"])
            return false
        }
    }

    /// Starts `<method> <url><path>` with the agent's headers plus `headers` (and `body`); returns once the answer's
    /// head arrived.
    func execute(
        path: String, method: HTTPMethod = .GET, headers extra: HTTPHeaders, body: [UInt8]? = nil
    ) async throws(RequestFailure) -> HTTPClientResponse {
        var request = HTTPClientRequest(url: uplink.requestURL(path: path))
        request.method = method
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        request.headers.add(name: "Uplink-Agent", value: uplink.agentID)
        if let token = uplink.token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        // On every request: a collector with `labels_from: agent` needs them to know what is assigned (a blob of a
        // document assigned by label is refused to a request without them).
        if !labels.isEmpty { request.headers.add(name: "Uplink-Labels", value: AgentLabels.header(labels)) }
        request.headers.add(contentsOf: extra)
        if let tlsReloader {
            do {
                request.tlsConfiguration = try tlsReloader.configuration()
            } catch {
                throw RequestFailure(description: "TLS settings unusable: \(error)")
            }
        }
        do {
            // No deadline here: AsyncHTTPClient's ends at the response head; `withinRequestDeadline` covers the body.
            return try await client.execute(request, deadline: .distantFuture, logger: logger)
        } catch {
            throw RequestFailure(description: describe(error))
        }
    }

    func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError, error == .readTimeout {
            return "no data from the collector for \(timeouts.readIdle) (read timeout)"
        }
        // AsyncHTTPClient fails the request with whichever of its connect deadlines fires first (the connection's,
        // the queued request's, the proxy's or the TLS handshake's); all of them are the one connect timeout here.
        if let error = error as? HTTPClientError, Self.connectTimeoutErrors.contains(error) {
            return "no connection within the connect timeout (\(timeouts.connect), uplink.connect_timeout): \(error)"
        }
        if let error = error as? HTTPClientError { return "\(error)" }
        return StreamConnector.describe(error, connectTimeout: timeouts.connect)
    }

    private static let connectTimeoutErrors: [HTTPClientError] = [
        .connectTimeout, .getConnectionFromPoolTimeout, .tlsHandshakeTimeout, .httpProxyHandshakeTimeout,
    ]

    /// `timeouts.request` passed before the request and its body were done.
    struct RequestDeadlineExceeded: Error {
        static func description(_ limit: Duration) -> String { "the request took longer than \(limit)" }
    }

    /// Runs `operation` (a request and the reading of its body), cancelling it when `timeouts.request` has passed on
    /// the clock; then throws `RequestDeadlineExceeded`. Returns once `operation` has ended either way.
    func withinRequestDeadline<R: Sendable>(_ operation: @escaping @Sendable () async throws -> R) async throws -> R {
        let clock = self.clock
        let limit = timeouts.request
        return try await withThrowingTaskGroup(of: R?.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await clock.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let result = first else { throw RequestDeadlineExceeded() }
            return result
        }
    }

    /// The readable start of an error answer's body (what a proxy says), if any.
    private static func detail(of response: HTTPClientResponse) async -> String? {
        var bytes: [UInt8] = []
        do {
            for try await part in response.body {
                bytes.append(contentsOf: part.readableBytesView.prefix(RejectionDetail.maximumBytes - bytes.count))
                if bytes.count >= RejectionDetail.maximumBytes { break }
            }
        } catch {
            // The status says enough.
        }
        return RejectionDetail.text(of: bytes)
    }
}
