import UplinkConfig
import UplinkCore
import UplinkTransport

extension UplinkFile {
    /// What `Agent` runs with, from this file.
    ///
    /// - Parameter embeddedURL: The base URL of the in-process collector the caller started, used when
    ///   `uplink.url` is `embedded`. When nil, the `collector.listen` address (default `127.0.0.1:4318`) is used as
    ///   `http://<listen>`. Ignored for a collector URL.
    ///
    /// With `url: embedded` and no `uplink.token`, the agent sends the collector's token (if it has one), so an
    /// embedded collector that requires a token accepts its own agent. Each call draws a fresh stream epoch (as
    /// every agent start must). Meaningful when `configuresAgent` is true: for a collector-only file the result has
    /// no sources and targets the collector's listen address.
    public func agentConfiguration(embeddedURL: String?) -> AgentConfiguration {
        let url: String
        var token = uplink.token
        switch uplink.target {
        case .url(let collectorURL):
            url = collectorURL
        case .embedded:
            let collector = self.collector ?? CollectorSection()
            url = embeddedURL ?? "http://\(collector.listen)"
            token = token ?? collector.token
        }
        let uplinkConfiguration = UplinkConfiguration(
            url: url, agentID: agent.id, token: token, backoff: uplink.backoff, heartbeatInterval: uplink.heartbeat,
            stallTimeout: uplink.stallTimeout, streamBufferBytes: uplink.streamBufferBytes,
            drainTimeout: uplink.drainTimeout)
        return AgentConfiguration(
            uplink: uplinkConfiguration, sources: sources, bufferBytes: buffer.maxBytes, overflow: buffer.overflow,
            stateDirectory: agent.stateDirectory)
    }
}
