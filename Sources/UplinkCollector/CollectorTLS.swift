import NIOCore
import NIOSSL

/// TLS on the collector's listening socket (`collector.tls`). HTTP/2 and HTTP/1.1 are both offered through ALPN;
/// TLS 1.2 is the minimum version, 1.3 is preferred by the handshake.
public struct CollectorTLS: Sendable, Equatable {
    /// Whether agents must present a client certificate (mutual TLS).
    public enum ClientAuthentication: String, Sendable, Equatable, CaseIterable {
        /// No client certificate is asked for.
        case none
        /// A client certificate is asked for; one that is presented must chain to `clientCAFile`, none at all is
        /// accepted.
        case optional
        /// A client certificate chaining to `clientCAFile` is required; the handshake fails without one.
        case required
    }

    /// What a stream's `Uplink-Agent` header is checked against.
    public enum AgentIdentity: String, Sendable, Equatable, CaseIterable {
        /// The header is taken as it is.
        case header
        /// The header must equal the client certificate's subject common name or one of its DNS subject alternative
        /// names; a stream without a certificate, or whose header names another agent, is refused with `403`.
        case certificate
    }

    /// PEM file with the server certificate, optionally followed by its intermediates.
    public var certificateFile: String
    /// PEM file with the certificate's private key.
    public var keyFile: String
    /// PEM bundle of the authorities that issue agent certificates; needed unless `clientAuthentication` is `none`.
    public var clientCAFile: String?
    /// Default `.none`.
    public var clientAuthentication: ClientAuthentication
    /// Default `.header`.
    public var agentIdentity: AgentIdentity

    /// Creates a TLS setting; every parameter but the two files has the default documented on its property.
    public init(
        certificateFile: String, keyFile: String, clientCAFile: String? = nil,
        clientAuthentication: ClientAuthentication = .none, agentIdentity: AgentIdentity = .header
    ) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.clientCAFile = clientCAFile
        self.clientAuthentication = clientAuthentication
        self.agentIdentity = agentIdentity
    }

    /// Reads the files and builds the server side of swift-nio-ssl's configuration (ALPN is set by the HTTP/2
    /// upgrade channel). Throws a `CollectorError` with code `tls` naming the file at fault.
    func serverConfiguration() throws -> TLSConfiguration {
        let chain = try Self.certificates(in: certificateFile, what: "certificate")
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        } catch {
            throw CollectorError(code: "tls", message: "cannot read the private key \(keyFile): \(error)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        switch clientAuthentication {
        case .none:
            configuration.certificateVerification = .none
        case .optional:
            configuration.certificateVerification = .optionalVerification
        case .required:
            configuration.certificateVerification = .noHostnameVerification
        }
        if clientAuthentication != .none {
            guard let clientCAFile else {
                throw CollectorError(code: "tls", message: "client_auth \(clientAuthentication.rawValue) needs client_ca_file")
            }
            let authorities = try Self.certificates(in: clientCAFile, what: "client CA bundle")
            configuration.trustRoots = .certificates(authorities)
            // Only these authorities are sent to clients as acceptable issuers.
            configuration.sendCANameList = true
        }
        do {
            // Fails here, not at the first handshake, when the key does not belong to the certificate.
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw CollectorError(
                code: "tls", message: "the key \(keyFile) does not match the certificate \(certificateFile): \(error)")
        }
        return configuration
    }

    /// The PEM certificates in `file`, which is the `what` (for the message: `certificate`, `client CA bundle`).
    /// Throws a `CollectorError` with code `tls` when the file cannot be read or holds no certificate.
    private static func certificates(in file: String, what: String) throws -> [NIOSSLCertificate] {
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(file)
        } catch {
            throw CollectorError(code: "tls", message: "cannot read the \(what) \(file): \(error)")
        }
        guard !certificates.isEmpty else {
            throw CollectorError(code: "tls", message: "\(file) holds no PEM certificate")
        }
        return certificates
    }

    /// The names a client certificate vouches for: its subject common names and its DNS subject alternative names.
    static func identities(of certificate: NIOSSLCertificate) -> [String] {
        var names = certificate.subjectName.filter { $0.type == .commonName }.map(\.value)
        for name in certificate._subjectAlternativeNames() where name.nameType == .dnsName {
            names.append(name.contents.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) })
        }
        return names
    }
}
