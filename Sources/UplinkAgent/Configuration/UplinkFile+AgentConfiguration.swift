import UplinkConfig
import UplinkCore
import UplinkTransport

extension UplinkFile {
    /// What `Agent` runs with, from this file.
    ///
    /// - Parameter embedded: The in-process collector the caller started (or would start), used when `uplink.url`
    ///   is `embedded`: its URL, and its token, which the agent sends when `uplink.token` is not set, so that an
    ///   embedded collector that requires a token accepts its own agent. Ignored for a collector URL; without it an
    ///   `embedded` target points at `http://127.0.0.1:4318`.
    ///
    /// Each call draws a fresh stream epoch (with `buffer.persist`, `Agent.open` replaces it with the persisted one).
    /// Meaningful when `configuresAgent` is true: for a collector-only file the result has no sources.
    ///
    /// `environment` supplies `SSL_CERT_FILE`/`SSL_CERT_DIR` (trust without `uplink.tls.ca_file`) and, when
    /// `uplink.proxy` is absent, `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` (see `ProxyEnvironment`); an embedded
    /// collector is always reached directly.
    public func agentConfiguration(embedded: EmbeddedCollectorTarget?, environment: ConfigEnvironment = .process) -> AgentConfiguration {
        let url: String
        var token = uplink.token
        switch uplink.target {
        case .url(let collectorURL):
            url = collectorURL
        case .embedded:
            url = embedded?.url ?? "http://127.0.0.1:4318"
            token = token ?? embedded?.token
        }
        var uplinkConfiguration = UplinkConfiguration(
            url: url, agentID: agent.id, token: token, backoff: uplink.backoff, heartbeatInterval: uplink.heartbeat,
            stallTimeout: uplink.stallTimeout, connectTimeout: uplink.connectTimeout, streamBufferBytes: uplink.streamBufferBytes,
            linger: uplink.linger, compression: uplink.compression, drainTimeout: uplink.drainTimeout,
            tls: (uplink.tls ?? UplinkTLS()).withTrustEnvironment { environment.value(of: $0) })
        if remoteConfig.enabled { uplinkConfiguration.labels = remoteConfig.labels }
        if case .url = uplink.target {
            switch uplink.proxy {
            case .none: break
            case .proxy(let proxy): uplinkConfiguration.proxy = proxy
            case .environment:
                if case .proxy(let proxy, _) = ProxyEnvironment.resolve(collectorURL: url, environment: { environment.value(of: $0) }) {
                    uplinkConfiguration.proxy = proxy
                }
            }
        }
        var configuration = AgentConfiguration(
            uplink: uplinkConfiguration, sources: sources, bufferBytes: buffer.maxBytes, overflow: buffer.overflow,
            stateDirectory: agent.stateDirectory)
        configuration.metricsListen = agent.metricsListen
        configuration.persistence = buffer.persist?.settings(stateDirectory: agent.stateDirectory, overflow: buffer.overflow)
        return configuration
    }
}

/// Where the agent reaches the collector its process embeds (`uplink.url: embedded`).
public struct EmbeddedCollectorTarget: Sendable, Equatable {
    /// The collector's base URL, on loopback.
    public var url: String
    /// The token the collector requires, if any.
    public var token: String?

    public init(url: String, token: String?) {
        self.url = url
        self.token = token
    }
}
