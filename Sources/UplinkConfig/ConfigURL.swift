import UplinkCore

/// A network address written as `host:port`.
public struct ConfigHostPort: Sendable, Hashable, CustomStringConvertible {
    /// Host name or IP address, without the brackets of an IPv6 address.
    public var host: String
    /// TCP port, 0...65535.
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// `host:port`, with brackets around an IPv6 address.
    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// Validation of the URLs and addresses a configuration names.
public enum ConfigURL {
    /// Why `text` is not an acceptable collector URL, or nil when it is.
    ///
    /// Accepted: `http://` or `https://` (any case), a host name, IPv4 address or bracketed IPv6 address, an optional
    /// port 1...65535 and an optional path. Rejected: other schemes, a missing host, credentials (`user:pass@`),
    /// query strings, fragments and whitespace.
    /// - Parameter alternatives: Special values also accepted by the setting, mentioned in the hint.
    public static func validate(_ text: String, alternatives: [String] = []) -> ConfigValueError? {
        func fail(_ problem: String, hint: String? = nil) -> ConfigValueError {
            ConfigValueError(message: "invalid URL '\(text)': \(problem)", hint: hint)
        }
        let example = "e.g. 'http://collector.example:4318'"
            + alternatives.map { ", or '\($0)'" }.joined()
        guard let schemeEnd = text.firstRange(of: "://") else {
            return fail("expected http:// or https:// followed by a host", hint: example)
        }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else {
            return fail("the scheme must be http or https, not '\(scheme)'", hint: example)
        }
        if text.contains(where: { $0.isWhitespace }) { return fail("it contains whitespace") }
        if text.contains("?") || text.contains("#") {
            return fail("query strings and fragments are not supported", hint: "give the collector's base URL; uplink appends /v1/stream")
        }
        let rest = text[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" }
        if authority.contains("@") {
            return fail("credentials in the URL are not supported", hint: "use 'token' or 'token_file'")
        }
        switch splitHostPort(String(authority)) {
        case .failure(let problem): return fail(problem.text)
        case .success(let (host, port)):
            if host.isEmpty { return fail("the host is missing", hint: example) }
            if let problem = hostProblem(host) { return fail(problem) }
            if let port {
                guard let number = Int(port), port.allSatisfy(\.isNumber), (1...65535).contains(number) else {
                    return fail("the port must be a number from 1 to 65535, not '\(port)'")
                }
            }
            return nil
        }
    }

    /// `text` as a `host:port` listen address, port 0...65535 (0: any free port).
    public static func hostPort(_ text: String) -> Result<ConfigHostPort, ConfigValueError> {
        func fail(_ problem: String) -> Result<ConfigHostPort, ConfigValueError> {
            .failure(ConfigValueError(
                message: "invalid address '\(text)': \(problem)",
                hint: "write host:port, e.g. '127.0.0.1:4318', '0.0.0.0:4318' or '[::1]:4318'"))
        }
        switch splitHostPort(text) {
        case .failure(let problem): return fail(problem.text)
        case .success(let (host, port)):
            guard let port else { return fail("the port is missing") }
            if host.isEmpty { return fail("the host is missing") }
            if let problem = hostProblem(host) { return fail(problem) }
            guard let number = Int(port), port.allSatisfy(\.isNumber), (0...65535).contains(number) else {
                return fail("the port must be a number from 0 to 65535, not '\(port)'")
            }
            return .success(ConfigHostPort(host: host, port: number))
        }
    }

    /// Splits `host[:port]` or `[v6]:port`; the host without brackets.
    private static func splitHostPort(_ authority: String) -> Result<(String, String?), ProblemText> {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return .failure("the IPv6 address lacks its ']'") }
            let host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.isEmpty { return .success((host, nil)) }
            guard after.hasPrefix(":") else { return .failure("unexpected '\(after)' after the IPv6 address") }
            return .success((host, String(after.dropFirst())))
        }
        guard let colon = authority.lastIndex(of: ":") else { return .success((authority, nil)) }
        let host = String(authority[..<colon])
        if host.contains(":") { return .failure("an IPv6 address must be written in brackets, e.g. '[::1]:4318'") }
        return .success((host, String(authority[authority.index(after: colon)...])))
    }

    /// Why `host` is not a plausible host name or address, or nil.
    private static func hostProblem(_ host: String) -> String? {
        let allowed = host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-._:%".contains($0)) }
        return allowed ? nil : "'\(host)' is not a valid host name"
    }
}

/// A problem description, usable as a `Result` failure.
struct ProblemText: Error, ExpressibleByStringLiteral, ExpressibleByStringInterpolation {
    var text: String
    init(stringLiteral value: String) { text = value }
    init(stringInterpolation: DefaultStringInterpolation) { text = String(stringInterpolation: stringInterpolation) }
}
