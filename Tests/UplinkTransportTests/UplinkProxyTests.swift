import Testing
@testable import UplinkTransport

@Suite("Uplink proxy settings")
struct UplinkProxyTests {
    @Test("Proxy URLs: scheme optional, port default 80, percent-encoded credentials, IPv6")
    func parse() throws {
        #expect(try UplinkProxy.parse("http://proxy.example:3128").get() == UplinkProxy(host: "proxy.example", port: 3128))
        #expect(try UplinkProxy.parse("proxy.example:3128").get() == UplinkProxy(host: "proxy.example", port: 3128))
        #expect(try UplinkProxy.parse("http://proxy.example/").get() == UplinkProxy(host: "proxy.example", port: 80))
        #expect(try UplinkProxy.parse("HTTP://u%40x:p%3Aw@[::1]:8080").get()
            == UplinkProxy(host: "::1", port: 8080, username: "u@x", password: "p:w"))
        #expect(try UplinkProxy.parse("http://user@h:1").get() == UplinkProxy(host: "h", port: 1, username: "user", password: ""))
    }

    @Test("Bad proxy URLs are refused, never echoing a password")
    func invalid() {
        func message(_ text: String) -> String? {
            if case .failure(let problem) = UplinkProxy.parse(text) { return problem.message }
            return nil
        }
        #expect(message("https://proxy:443") == "invalid proxy URL 'https://proxy:443': the scheme must be http (a CONNECT proxy reached over plain HTTP), not 'https'")
        #expect(message("socks5://proxy:1080")?.contains("not 'socks5'") == true)
        #expect(message("http://proxy:0") == "invalid proxy URL 'http://proxy:0': the port must be a number from 1 to 65535")
        #expect(message("http://proxy:99999")?.contains("1 to 65535") == true)
        #expect(message("http://:3128") == "invalid proxy URL 'http://:3128': the host is missing")
        #expect(message("http://proxy:3128/path") == "invalid proxy URL 'http://proxy:3128/path': only http://[user:password@]host:port is accepted")
        #expect(message("http://u:topsecret@proxy:x") == "invalid proxy URL 'http://u:***@proxy:x': the port must be a number from 1 to 65535")
        #expect(message("http://u:%zz@proxy:1")?.contains("percent-encoding") == true)
        #expect(UplinkProxy(host: "p", port: 1, username: "u", password: "secret").description == "http://p:1 (with credentials)")
    }

    @Test("HTTPS_PROXY for https, HTTP_PROXY for http, lowercase first")
    func environment() {
        let proxy = UplinkProxy(host: "proxy", port: 3128)
        let env: [String: String] = ["HTTPS_PROXY": "http://proxy:3128", "http_proxy": "proxy:8080", "HTTP_PROXY": "other:1"]
        #expect(ProxyEnvironment.resolve(collectorURL: "https://c.example:4318", environment: { env[$0] })
            == .proxy(proxy, variable: "HTTPS_PROXY"))
        #expect(ProxyEnvironment.resolve(collectorURL: "http://c.example:4318", environment: { env[$0] })
            == .proxy(UplinkProxy(host: "proxy", port: 8080), variable: "http_proxy"))
        #expect(ProxyEnvironment.resolve(collectorURL: "https://c.example", environment: { _ in nil }) == .direct)
        #expect(ProxyEnvironment.resolve(collectorURL: "https://c.example", environment: { $0 == "HTTPS_PROXY" ? "" : nil }) == .direct)
        if case .invalid(let variable, _) = ProxyEnvironment.resolve(
            collectorURL: "https://c.example", environment: { $0 == "https_proxy" ? "socks5://p:1" : nil })
        {
            #expect(variable == "https_proxy")
        } else {
            Issue.record("a socks URL must be reported as invalid")
        }
    }

    @Test("NO_PROXY: *, domain suffixes with or without a dot, IPs, ports, case")
    func noProxy() {
        func exempt(_ host: String, _ list: String) -> String? {
            ProxyEnvironment.exemption(host: host, port: 443, noProxy: list)
        }
        func exempt(_ host: String, _ port: Int, _ list: String) -> String? {
            ProxyEnvironment.exemption(host: host, port: port, noProxy: list)
        }
        #expect(exempt("collector.example.com", "*") == "*")
        #expect(exempt("collector.example.com", "localhost, example.com") == "example.com")
        #expect(exempt("collector.example.com", ".example.com") == ".example.com")
        #expect(exempt("collector.example.com", "*.EXAMPLE.com") == "*.EXAMPLE.com")
        #expect(exempt("example.com", ".example.com") == ".example.com")
        #expect(exempt("notexample.com", "example.com") == nil)
        #expect(exempt("10.1.2.3", "10.1.2.3") == "10.1.2.3")
        #expect(exempt("10.1.2.30", "10.1.2.3") == nil)
        #expect(exempt("c.example", 4318, "c.example:4318") == "c.example:4318")
        #expect(exempt("c.example", 443, "c.example:4318") == nil)
        #expect(exempt("::1", 4318, "[::1]:4318") == "[::1]:4318")
        #expect(exempt("::1", 4318, "::1") == "::1")
        #expect(exempt("anything", ",, ,") == nil)
        let env = ["HTTPS_PROXY": "proxy:3128", "NO_PROXY": "internal,collector.example"]
        #expect(ProxyEnvironment.resolve(collectorURL: "https://collector.example:4318/", environment: { env[$0] })
            == .exempt("collector.example"))
    }

    @Test("server_name: the request goes to the name, the client connects to the URL's host")
    func serverName() {
        var configuration = UplinkConfiguration(url: "https://127.0.0.1:4318/base", agentID: "a")
        configuration.tls.serverName = "collector.example"
        #expect(configuration.requestURL == "https://collector.example:4318/base/v1/stream")
        #expect(Uplink.clientConfiguration(configuration).dnsOverride == ["collector.example": "127.0.0.1"])
        configuration.url = "https://[::1]/"
        #expect(configuration.requestURL == "https://collector.example:443/v1/stream")
        configuration.url = "http://127.0.0.1:4318"
        #expect(configuration.requestURL == "http://127.0.0.1:4318/v1/stream")
        #expect(Uplink.clientConfiguration(configuration).dnsOverride.isEmpty)
    }
}
