import NIOSSL
import UplinkConfig

extension CollectorTLS {
    /// The keys of `collector.tls`.
    public static let keys = ["cert_file", "key_file", "client_ca_file", "client_auth", "agent_identity"]
    /// Largest certificate, key or bundle file read, in bytes.
    public static let maximumFileBytes = 1 << 20

    /// Decodes and checks `collector.tls`: the files (relative to the configuration file's directory) are read and
    /// parsed now, and the key must belong to the certificate, so that `uplink validate` reports what would
    /// otherwise fail at start. Nil when a file is missing or unusable (reported).
    public static func decode(_ section: ConfigMapping) -> CollectorTLS? {
        let certificate = section.require("cert_file", hint: "the PEM certificate the collector presents")
            .flatMap { readFile(section, "cert_file", $0) }
        let key = section.require("key_file", hint: "the PEM private key of cert_file")
            .flatMap { readFile(section, "key_file", $0) }
        let authorities = section.value("client_ca_file").flatMap { readFile(section, "client_ca_file", $0) }

        var chain: [NIOSSLCertificate]?
        if let certificate {
            chain = certificates(section, "cert_file", certificate)
        }
        var privateKey: NIOSSLPrivateKey?
        if let key {
            do {
                privateKey = try NIOSSLPrivateKey(bytes: key.bytes, format: .pem)
            } catch {
                section.decoder.report(
                    .invalidValue, at: key.mark, path: section.path("key_file"),
                    "'\(key.path)' holds no usable PEM private key (\(error))",
                    hint: "an unencrypted PEM key (BEGIN PRIVATE KEY or BEGIN EC/RSA PRIVATE KEY)")
            }
        }
        if let chain, let privateKey, let key, let certificate {
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(privateKey))
            configuration.minimumTLSVersion = .tlsv12
            do {
                _ = try NIOSSLContext(configuration: configuration)
            } catch {
                section.decoder.report(
                    .invalidValue, at: key.mark, path: section.path("key_file"),
                    "the key in '\(key.path)' does not belong to the certificate in '\(certificate.path)' (\(error))")
            }
        }
        if let authorities { _ = certificates(section, "client_ca_file", authorities) }

        var clientAuthentication: ClientAuthentication =
            authorities == nil && !section.contains("client_ca_file") ? .none : .required
        if let value = section.enumeration("client_auth", as: ClientAuthentication.self) {
            clientAuthentication = value
            let node = section.value("client_auth")!
            if value != .none, !section.contains("client_ca_file") {
                section.decoder.report(
                    .missingKey, at: node.mark, path: section.path("client_auth"),
                    "client_auth '\(value.rawValue)' needs client_ca_file, the authorities that issue agent certificates")
            } else if value == .none, section.contains("client_ca_file") {
                section.decoder.report(
                    .invalidValue, at: node.mark, path: section.path("client_auth"),
                    "client_ca_file is set but client_auth is 'none', so no agent certificate would be asked for",
                    hint: "use 'required' or 'optional', or remove client_ca_file")
            }
        }
        var agentIdentity = AgentIdentity.header
        if let value = section.enumeration("agent_identity", as: AgentIdentity.self) {
            agentIdentity = value
            if value == .certificate, clientAuthentication == .none {
                section.decoder.report(
                    .invalidValue, at: section.value("agent_identity")!.mark, path: section.path("agent_identity"),
                    "agent_identity 'certificate' needs client certificates",
                    hint: "set client_ca_file (client_auth then defaults to 'required')")
            }
        }
        guard let certificate, let key else { return nil }
        return CollectorTLS(
            certificateFile: certificate.path, keyFile: key.path, clientCAFile: authorities?.path,
            clientAuthentication: clientAuthentication, agentIdentity: agentIdentity)
    }

    private struct File {
        var path: String
        var bytes: [UInt8]
        var mark: ConfigMark
    }

    private static func readFile(_ section: ConfigMapping, _ key: String, _ node: ConfigNode) -> File? {
        guard let name = section.decoder.string(node, at: section.path(key)) else { return nil }
        let path = ConfigFiles.resolve(name, relativeTo: section.decoder.baseDirectory)
        switch ConfigFiles.read(path: path, limit: maximumFileBytes) {
        case .failure(let error):
            section.decoder.report(.unreadableFile, at: node.mark, path: section.path(key), "cannot read '\(path)': \(error)")
            return nil
        case .success(let bytes):
            return File(path: path, bytes: bytes, mark: node.mark)
        }
    }

    private static func certificates(_ section: ConfigMapping, _ key: String, _ file: File) -> [NIOSSLCertificate]? {
        do {
            let certificates = try NIOSSLCertificate.fromPEMBytes(file.bytes)
            if !certificates.isEmpty { return certificates }
        } catch {}
        section.decoder.report(
            .invalidValue, at: file.mark, path: section.path(key), "'\(file.path)' holds no PEM certificate",
            hint: "a file with -----BEGIN CERTIFICATE----- blocks")
        return nil
    }
}
