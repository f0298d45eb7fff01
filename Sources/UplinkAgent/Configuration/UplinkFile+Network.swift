import UplinkConfig
import UplinkCore
import UplinkTransport

extension UplinkFile.UplinkSection {
    /// `uplink.tls` and `uplink.proxy`. The TLS files are read and checked now (the same loading the uplink does
    /// before it connects), so a missing file, a broken PEM or a key that does not match its certificate is an issue
    /// at the key that names the file.
    static func decodeNetwork(_ section: ConfigMapping, into uplink: inout Self) {
        if let proxy = section.string("proxy", { text -> Result<ProxySetting, ConfigValueError> in
            guard text != "none" else { return .success(.none) }
            return UplinkProxy.parse(text).map(ProxySetting.proxy).mapError { problem in
                ConfigValueError(
                    message: problem.message, hint: "write 'http://host:port' (optionally 'http://user:password@host:port'), or 'none'")
            }
        }) {
            uplink.proxy = proxy
        }
        guard let tls = section.mapping("tls", allowedKeys: tlsKeys) else { return }
        // Judged on the text as written, so an https URL with another problem (already reported) is not also
        // reported here.
        let urlText = section.value("url")?.scalar?.value.lowercased()
        if let urlText, !urlText.hasPrefix("https://") {
            section.decoder.report(
                .invalidValue, at: tls.node.mark, path: section.path("tls"),
                "'tls' applies only to an https:// url", hint: "use an https:// url, or remove 'tls'")
        }
        if let settings = decodeTLS(tls) { uplink.tls = settings }
    }

    private static func decodeTLS(_ section: ConfigMapping) -> UplinkTLS? {
        let before = section.decoder.issues.count
        var settings = UplinkTLS()
        let base = section.decoder.baseDirectory
        settings.caFile = section.string("ca_file").map { ConfigFiles.resolve($0, relativeTo: base) }
        settings.certificateFile = section.string("cert_file").map { ConfigFiles.resolve($0, relativeTo: base) }
        settings.keyFile = section.string("key_file").map { ConfigFiles.resolve($0, relativeTo: base) }
        if let useSystem = section.bool("use_system_trust") {
            settings.useSystemTrust = useSystem
            if settings.caFile == nil, let node = section.value("use_system_trust") {
                section.decoder.report(
                    .invalidValue, at: node.mark, path: section.path("use_system_trust"),
                    "'use_system_trust' only matters with 'ca_file'",
                    hint: "without 'ca_file' the system trust store is always used")
            }
        }
        if let name = section.string("server_name", { name in
            let valid = name.utf8.count <= 253
                && name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }
            return valid
                ? .success(name.lowercased())
                : .failure(ConfigValueError(message: "'\(name)' is not a host name", hint: "the DNS name the collector's certificate carries"))
        }) {
            settings.serverName = name
        }
        if let version = section.enumeration("min_version", as: UplinkTLS.MinimumVersion.self) {
            settings.minimumVersion = version
        }
        for (key, partner) in [("cert_file", "key_file"), ("key_file", "cert_file")]
        where section.value(key) != nil && section.value(partner) == nil {
            section.decoder.report(
                .missingKey, at: section.value(key)!.mark, path: section.path(partner),
                "'\(key)' is set without '\(partner)'", hint: "a client certificate needs both its certificate and its key")
            return nil
        }
        guard section.decoder.issues.count == before else { return nil }
        if let problem = settings.check() {
            let node = section.value(problem.key) ?? section.node
            section.decoder.report(
                problem.unreadable ? .unreadableFile : .invalidValue, at: node.mark, path: section.path(problem.key),
                problem.message)
            return nil
        }
        return settings
    }
}
