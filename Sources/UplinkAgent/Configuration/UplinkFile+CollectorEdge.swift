import NIOSSL
import UplinkConfig
import UplinkCore
import UplinkWire

extension UplinkFile.CollectorSection {
    /// `collector.tls`: the certificate and key of the collector, and how agents authenticate.
    public struct TLSSection: Sendable, Equatable {
        /// `collector.tls.client_auth`.
        public enum ClientAuth: String, Sendable, Equatable, CaseIterable {
            case none, optional, required
        }

        /// `collector.tls.agent_identity`.
        public enum AgentIdentity: String, Sendable, Equatable, CaseIterable {
            case header, certificate
        }

        /// `collector.tls.cert_file` (path, required; relative to the configuration file's directory): PEM file
        /// with the collector's certificate, optionally followed by its intermediates.
        public var certFile: String
        /// `collector.tls.key_file` (path, required): PEM file with the certificate's private key (unencrypted).
        public var keyFile: String
        /// `collector.tls.client_ca_file` (path): PEM bundle of the authorities that issue agent certificates.
        /// Default: none.
        public var clientCAFile: String?
        /// `collector.tls.client_auth` (`none`, `optional` or `required`): whether agents must present a
        /// certificate issued by `client_ca_file`; `optional` accepts agents without one but refuses a bad one.
        /// Default `required` when `client_ca_file` is set, else `none`.
        public var clientAuth: ClientAuth
        /// `collector.tls.agent_identity` (`header` or `certificate`): with `certificate`, a stream's
        /// `Uplink-Agent` must be the client certificate's subject CN or one of its DNS names, else it is refused
        /// with `403`. Needs `client_auth` `optional` or `required`. Default `header`.
        public var agentIdentity: AgentIdentity

        public init(
            certFile: String, keyFile: String, clientCAFile: String? = nil, clientAuth: ClientAuth = .none,
            agentIdentity: AgentIdentity = .header
        ) {
            self.certFile = certFile
            self.keyFile = keyFile
            self.clientCAFile = clientCAFile
            self.clientAuth = clientAuth
            self.agentIdentity = agentIdentity
        }

        static let keys = ["cert_file", "key_file", "client_ca_file", "client_auth", "agent_identity"]
        /// Largest certificate, key or bundle file read, in bytes.
        public static let maximumFileBytes = 1 << 20
    }

    /// Decodes the keys of the network edge: limits, deadlines and `tls`.
    mutating func decodeEdge(_ section: ConfigMapping) {
        if let timeout = section.duration("request_head_timeout", .between(.milliseconds(1), .seconds(3600))) {
            requestHeadTimeout = timeout
        }
        if let timeout = section.duration("stream_idle_timeout", .between(.milliseconds(1), .seconds(86400))) {
            streamIdleTimeout = timeout
        }
        if let streams = section.int("max_streams", .between(1, 1_000_000)) { maxStreams = streams }
        if let mapping = section.mapping("tls", allowedKeys: TLSSection.keys) {
            tls = TLSSection.decode(mapping)
        }
        decodeAcceptEncodings(section)
    }

    /// `collector.accept_encodings`: a list of `zstd` and `gzip`, each at most once (`none` is not listed: an
    /// uncompressed body is always accepted).
    private mutating func decodeAcceptEncodings(_ section: ConfigMapping) {
        guard let items = section.list("accept_encodings") else { return }
        let allowed = WireCompression.allCases.filter { $0 != .none }
        var encodings: [WireCompression] = []
        var valid = true
        for item in items {
            guard let name = section.decoder.string(item.node, at: item.path) else {
                valid = false
                continue
            }
            guard let encoding = allowed.first(where: { $0.rawValue == name }) else {
                let hint =
                    name == "none" || name == "identity"
                    ? "an uncompressed body is always accepted; list only zstd and gzip"
                    : "list any of: \(allowed.map(\.rawValue).joined(separator: ", "))"
                section.decoder.report(
                    .invalidValue, at: item.node.mark, path: item.path, "'\(name)' is not a compressed encoding", hint: hint)
                valid = false
                continue
            }
            guard !encodings.contains(encoding) else {
                section.decoder.report(
                    .invalidValue, at: item.node.mark, path: item.path, "'\(name)' is listed twice")
                valid = false
                continue
            }
            encodings.append(encoding)
        }
        if valid { acceptEncodings = encodings }
    }
}

extension UplinkFile.CollectorSection.TLSSection {
    /// Decodes and checks `collector.tls`: the files are read and parsed now, and the key must belong to the
    /// certificate, so that `uplink validate` reports what would otherwise fail at start.
    static func decode(_ section: ConfigMapping) -> Self? {
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

        var clientAuth: ClientAuth = authorities == nil && !section.contains("client_ca_file") ? .none : .required
        if let value = section.enumeration("client_auth", as: ClientAuth.self) {
            clientAuth = value
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
            if value == .certificate, clientAuth == .none {
                section.decoder.report(
                    .invalidValue, at: section.value("agent_identity")!.mark, path: section.path("agent_identity"),
                    "agent_identity 'certificate' needs client certificates",
                    hint: "set client_ca_file (client_auth then defaults to 'required')")
            }
        }
        guard let certificate, let key else { return nil }
        return Self(
            certFile: certificate.path, keyFile: key.path, clientCAFile: authorities?.path, clientAuth: clientAuth,
            agentIdentity: agentIdentity)
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
