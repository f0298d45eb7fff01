import UplinkCore
import UplinkWire

/// How the uplink reaches its collector and keeps the stream healthy.
public struct UplinkConfiguration: Sendable {
    /// Base URL of the collector, e.g. `http://127.0.0.1:4318`; the stream goes to `<url>/v1/stream`.
    public var url: String
    /// This agent's id (`Uplink-Agent` header). Default: the host name.
    public var agentID: String
    /// Stream epoch (`Uplink-Epoch` header); a fresh random value per agent start by default.
    public var epoch: UInt64
    /// Bearer token sent to the collector. Default: none.
    public var token: String?
    /// Reconnect delays. Defaults: 250 ms initial, ×2, 30 s cap, reset after 30 s healthy.
    public var backoff: Backoff
    /// A heartbeat line is sent after this long without any other line. Default 15 s.
    public var heartbeatInterval: Duration
    /// The stream counts as broken when records are outstanding and no ack came for this long, or when the pair had
    /// no room for this long, or when no response/resume line came this long after connecting. Default 30 s.
    public var stallTimeout: Duration
    /// How long one connection attempt may take: name resolution, TCP connect, the proxy's `CONNECT` and the TLS
    /// handshake together (one deadline from the first connect to the first byte of the request). A connection
    /// that is refused fails the attempt at once; this bounds one that gets no answer. The attempt is also bounded by
    /// `stallTimeout`, so the smaller of the two applies. Default 5 s.
    public var connectTimeout: Duration
    /// Capacity of the bound stream pair feeding the HTTP body, in bytes. Default 64 KiB.
    public var streamBufferBytes: Int
    /// `uplink.linger`: the latency budget within which what arrived is read and sent in one pass. The uplink itself
    /// writes at once; the tailer applies it to its reads (`SourceContext.linger`), so it is carried here with the
    /// other `uplink` settings. Zero (the default): every line is read and sent as it arrives.
    public var linger: Duration
    /// How the body is compressed (`Content-Encoding`): one compressor context per stream, flushed at the end of
    /// every write pass. A collector that answers `415` makes the uplink fall back to `.none` for the rest of its
    /// life (logged once). Default `.zstd`.
    public var compression: WireCompression
    /// On shutdown, how long to keep streaming until everything is acknowledged. Default 5 s.
    public var drainTimeout: Duration
    /// Seed for the backoff jitter; nil (default) seeds from the system's random source.
    public var jitterSeed: UInt64?
    /// TLS settings for an `https://` URL (ignored for `http://`). Default: the system trust store, TLS 1.2 or later.
    public var tls: UplinkTLS
    /// The HTTP proxy to tunnel through with CONNECT; nil (default) connects directly. The agent's assembly fills it
    /// from `uplink.proxy` or, without it, from `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` (`ProxyEnvironment`).
    public var proxy: UplinkProxy?
    /// The box's `remote_config.labels` (only with remote configuration on), sent as `Uplink-Labels` with the stream
    /// so that a collector that takes labels from agents (`labels_from: agent`) matches its rules. Default none.
    public var labels: [String: String] = [:]

    public init(
        url: String,
        agentID: String,
        epoch: UInt64 = UInt64.random(in: 1...UInt64(Int64.max)),
        token: String? = nil,
        backoff: Backoff = Backoff(),
        heartbeatInterval: Duration = .seconds(15),
        stallTimeout: Duration = .seconds(30),
        connectTimeout: Duration = UplinkConfiguration.defaultConnectTimeout,
        streamBufferBytes: Int = BoundStreamPair.defaultCapacity,
        linger: Duration = .zero,
        compression: WireCompression = UplinkConfiguration.defaultCompression,
        drainTimeout: Duration = .seconds(5),
        jitterSeed: UInt64? = nil,
        tls: UplinkTLS = UplinkTLS(),
        proxy: UplinkProxy? = nil
    ) {
        self.url = url
        self.agentID = agentID
        self.epoch = epoch
        self.token = token
        self.backoff = backoff
        self.heartbeatInterval = heartbeatInterval
        self.stallTimeout = stallTimeout
        self.connectTimeout = connectTimeout
        self.streamBufferBytes = streamBufferBytes
        self.linger = linger
        self.compression = compression
        self.drainTimeout = drainTimeout
        self.jitterSeed = jitterSeed
        self.tls = tls
        self.proxy = proxy
    }

    /// The default `compression`: zstd (a collector that lacks it answers 415, and the uplink falls back).
    public static let defaultCompression: WireCompression = .zstd

    /// The default `connectTimeout`: 5 s.
    public static let defaultConnectTimeout: Duration = .seconds(5)

    /// The connect timeout the HTTP client is given: `connectTimeout`, or `stallTimeout` when that is smaller (the
    /// attempt is given up then anyway; a connection still being made after it would outlive its attempt).
    public var effectiveConnectTimeout: Duration {
        min(connectTimeout, stallTimeout)
    }

    /// Whether the URL is `https://` (any case).
    public var usesTLS: Bool {
        url.lowercased().hasPrefix("https://")
    }

    /// The URL the stream's request is made to: `requestURL(path: "/v1/stream")`.
    var requestURL: String { requestURL(path: "/v1/stream") }

    /// The URL a request for `path` is made to: `url` with `path` appended, and the host replaced by
    /// `tls.serverName` when one is set (the client then connects to the URL's real host through a DNS override, see
    /// `Uplink.clientConfiguration`).
    func requestURL(path: String) -> String {
        let plain = urlString(path: path)
        guard usesTLS, let serverName = tls.serverName, let target = ProxyEnvironment.Target(url: url) else {
            return plain
        }
        let afterScheme = plain.dropFirst("https://".count)
        let authorityLength = afterScheme.prefix { $0 != "/" }.count
        let name = serverName.contains(":") ? "[\(serverName)]" : serverName
        return "https://\(name):\(target.port)" + afterScheme.dropFirst(authorityLength)
    }

    /// `url` with the stream path appended.
    public var streamURL: String { urlString(path: "/v1/stream") }

    /// `url` without trailing slashes, with `path` appended.
    func urlString(path: String) -> String {
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        return base + path
    }
}
