import Testing

@testable import UplinkTransport

/// Where a stream connects and what its request says, from `uplink.url`, `uplink.proxy` and `tls.server_name`.
@Suite("StreamConnector.Endpoint")
struct StreamEndpointTests {
    @Test("The URL's own path goes in front of /v1/stream; Host leaves out the scheme's default port")
    func pathAndAuthority() throws {
        let plain = try #require(StreamConnector.Endpoint(UplinkConfiguration(url: "http://collector.lan", agentID: "a")))
        #expect(plain.path == "/v1/stream")
        #expect(plain.authority == "collector.lan")
        #expect(plain.connectHost == "collector.lan" && plain.connectPort == 80)

        let prefixed = try #require(
            StreamConnector.Endpoint(UplinkConfiguration(url: "https://example.org:8443/uplink//", agentID: "a")))
        #expect(prefixed.path == "/uplink/v1/stream")
        #expect(prefixed.authority == "example.org:8443")
        #expect(prefixed.usesTLS)
    }

    @Test("IPv6 hosts are bracketed in Host and in the tunnel's target; the TCP connection goes to the proxy")
    func ipv6AndProxy() throws {
        var configuration = UplinkConfiguration(url: "http://[::1]:4318/", agentID: "a")
        configuration.proxy = UplinkProxy(host: "proxy.lan", port: 3128)
        let endpoint = try #require(StreamConnector.Endpoint(configuration))
        #expect(endpoint.host == "::1")
        #expect(endpoint.authority == "[::1]:4318")
        #expect(endpoint.tunnelTarget == "[::1]:4318")
        #expect(endpoint.connectHost == "proxy.lan" && endpoint.connectPort == 3128)
        #expect(endpoint.path == "/v1/stream")
    }

    @Test("tls.server_name is the name in Host and for the certificate; the connection still goes to the URL's host")
    func serverName() throws {
        var configuration = UplinkConfiguration(url: "https://127.0.0.1:9443", agentID: "a")
        configuration.tls.serverName = "collector.internal"
        let endpoint = try #require(StreamConnector.Endpoint(configuration))
        #expect(endpoint.serverName == "collector.internal")
        #expect(endpoint.authority == "collector.internal:9443")
        #expect(endpoint.connectHost == "127.0.0.1" && endpoint.connectPort == 9443)
        #expect(StreamConnector.Endpoint(UplinkConfiguration(url: "ftp://x", agentID: "a")) == nil)
    }
}
