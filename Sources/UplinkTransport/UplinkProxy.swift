import UplinkCore

/// An HTTP proxy the uplink tunnels through with `CONNECT` (for `https://` collectors TLS runs end to end inside the
/// tunnel; for `http://` collectors the tunnel carries plain HTTP).
public struct UplinkProxy: Sendable, Equatable, CustomStringConvertible {
    /// Proxy host name or IP address (without brackets).
    public var host: String
    /// Proxy port.
    public var port: Int
    /// User name for `Proxy-Authorization: Basic`, if any.
    public var username: String?
    /// Password for `Proxy-Authorization: Basic`, if any.
    public var password: String?

    public init(host: String, port: Int, username: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
    }

    /// `http://host:port`, never with the credentials.
    public var description: String {
        "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" + (username == nil ? "" : " (with credentials)")
    }

    /// Parses `http://[user[:password]@]host[:port][/]`. A missing scheme means `http://` (as curl reads
    /// `HTTPS_PROXY=proxy:3128`); a missing port means 80. User and password may be percent-encoded.
    public static func parse(_ text: String) -> Result<UplinkProxy, ProxyURLProblem> {
        func fail(_ problem: String) -> Result<UplinkProxy, ProxyURLProblem> {
            .failure(ProxyURLProblem(message: "invalid proxy URL '\(redacted(text))': \(problem)"))
        }
        var rest = Substring(text)
        if let schemeEnd = rest.firstRange(of: "://") {
            let scheme = rest[..<schemeEnd.lowerBound].lowercased()
            guard scheme == "http" else {
                return fail("the scheme must be http (a CONNECT proxy reached over plain HTTP), not '\(scheme)'")
            }
            rest = rest[schemeEnd.upperBound...]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        if rest.contains(where: { $0 == "/" || $0 == "?" || $0 == "#" || $0.isWhitespace }) {
            return fail("only http://[user:password@]host:port is accepted")
        }
        var proxy = UplinkProxy(host: "", port: 80)
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let parts = credentials.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            guard let user = percentDecoded(parts[0]), let password = parts.count > 1 ? percentDecoded(parts[1]) : ""
            else { return fail("the credentials have an invalid percent-encoding") }
            proxy.username = user
            proxy.password = password
        }
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return fail("the IPv6 address lacks its ']'") }
            proxy.host = String(rest[rest.index(after: rest.startIndex)..<close])
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return fail("unexpected '\(after)' after the IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let colon = rest.lastIndex(of: ":") {
            proxy.host = String(rest[..<colon])
            portText = rest[rest.index(after: colon)...]
        } else {
            proxy.host = String(rest)
        }
        if proxy.host.isEmpty { return fail("the host is missing") }
        if let portText {
            guard portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber), let port = Int(portText),
                (1...65535).contains(port)
            else { return fail("the port must be a number from 1 to 65535") }
            proxy.port = port
        }
        return .success(proxy)
    }

    /// `text` with any password replaced by `***`, for messages.
    static func redacted(_ text: String) -> String {
        guard let at = text.lastIndex(of: "@") else { return text }
        let start = text.firstRange(of: "://")?.upperBound ?? text.startIndex
        guard start < at else { return text }
        let credentials = text[start..<at]
        guard let colon = credentials.firstIndex(of: ":") else { return text }
        return String(text[..<colon]) + ":***" + String(text[at...])
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(ASCIIHexadecimal.digit), let low = iterator.next().flatMap(ASCIIHexadecimal.digit) else {
                return nil
            }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// Why a proxy URL was not accepted.
public struct ProxyURLProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public var description: String { message }
}

/// The `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` convention, used when `uplink.proxy` is not set.
public enum ProxyEnvironment {
    /// What the environment says about reaching `collectorURL`.
    public enum Resolution: Sendable, Equatable {
        /// No proxy variable applies: connect directly.
        case direct
        /// `NO_PROXY` exempts the collector's host (the entry is given).
        case exempt(String)
        /// Tunnel through this proxy; `variable` names where it came from.
        case proxy(UplinkProxy, variable: String)
        /// The variable holds something that is not a usable proxy URL.
        case invalid(variable: String, ProxyURLProblem)
    }

    /// Looks up `https_proxy`/`HTTPS_PROXY` for an `https://` URL or `http_proxy`/`HTTP_PROXY` for an `http://` one
    /// (lowercase first, as curl does), then `no_proxy`/`NO_PROXY`.
    public static func resolve(collectorURL: String, environment: (String) -> String?) -> Resolution {
        guard let target = Target(url: collectorURL) else { return .direct }
        let names = target.isHTTPS ? ["https_proxy", "HTTPS_PROXY"] : ["http_proxy", "HTTP_PROXY"]
        let set = names.compactMap { name in environment(name).map { (name: name, value: $0) } }
        guard let found = set.first(where: { !$0.value.isEmpty }) else { return .direct }
        let (variable, value) = (found.name, found.value)
        let noProxy = environment("no_proxy") ?? environment("NO_PROXY") ?? ""
        if let entry = exemption(host: target.host, port: target.port, noProxy: noProxy) { return .exempt(entry) }
        switch UplinkProxy.parse(value) {
        case .success(let proxy): return .proxy(proxy, variable: variable)
        case .failure(let problem): return .invalid(variable: variable, problem)
        }
    }

    /// The `NO_PROXY` entry that exempts `host:port`, or nil. Entries are comma- or space-separated: `*` (every
    /// host), a host name that matches itself and its subdomains (`example.com`, `.example.com` and `*.example.com`
    /// all match `a.example.com`), an IP address (exact), each optionally with `:port` to apply to that port only.
    /// Matching ignores case.
    public static func exemption(host: String, port: Int, noProxy: String) -> String? {
        let host = host.lowercased()
        for raw in noProxy.split(whereSeparator: { $0 == "," || $0 == " " }) {
            let entry = raw.lowercased()
            if entry == "*" { return String(raw) }
            var name = Substring(entry)
            var entryPort: Int?
            if name.hasPrefix("[") {
                guard let close = name.firstIndex(of: "]") else { continue }
                let after = name[name.index(after: close)...]
                if after.hasPrefix(":") { entryPort = Int(after.dropFirst()) }
                name = name[name.index(after: name.startIndex)..<close]
            } else if name.filter({ $0 == ":" }).count == 1, let colon = name.lastIndex(of: ":") {
                entryPort = Int(name[name.index(after: colon)...])
                name = name[..<colon]
            }
            if let entryPort, entryPort != port { continue }
            if name.hasPrefix("*.") { name = name.dropFirst(2) } else if name.hasPrefix(".") { name = name.dropFirst() }
            guard !name.isEmpty else { continue }
            if host == name || host.hasSuffix("." + name) { return String(raw) }
        }
        return nil
    }

    /// Scheme, host, port and path of a collector URL.
    struct Target {
        var isHTTPS: Bool
        var host: String
        var port: Int
        /// What follows the authority, without trailing slashes (`/collector` of `https://host/collector/`; empty
        /// for none).
        var path: String

        init?(url: String) {
            guard let schemeEnd = url.firstRange(of: "://") else { return nil }
            let scheme = url[..<schemeEnd.lowerBound].lowercased()
            guard scheme == "http" || scheme == "https" else { return nil }
            isHTTPS = scheme == "https"
            let afterScheme = url[schemeEnd.upperBound...]
            let authority = afterScheme.prefix { $0 != "/" }
            var path = afterScheme[authority.endIndex...]
            while path.hasSuffix("/") { path.removeLast() }
            self.path = String(path)
            var portText: Substring?
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { return nil }
                host = String(authority[authority.index(after: authority.startIndex)..<close])
                let after = authority[authority.index(after: close)...]
                if after.hasPrefix(":") { portText = after.dropFirst() }
            } else if let colon = authority.lastIndex(of: ":") {
                host = String(authority[..<colon])
                portText = authority[authority.index(after: colon)...]
            } else {
                host = String(authority)
            }
            port = portText.flatMap { Int($0) } ?? (isHTTPS ? 443 : 80)
        }
    }
}
