import NIOCore
import NIOSSL

/// How a request reached the collector: over HTTP/2 or HTTP/1.1, with TLS or not, and the client certificate.
struct StreamConnection: Sendable {
    var isHTTP2: Bool
    var isTLS: Bool
    /// `TLSv1.2` or `TLSv1.3`, nil without TLS.
    var tlsVersion: String?
    var certificate: NIOSSLCertificate?
    var peer: String

    /// The certificate's subject, `CN=…` style, or nil without a certificate.
    var certificateSubject: String? {
        guard let certificate else { return nil }
        let parts = certificate.subjectName.map { name -> String in
            let key: String =
                switch name.type {
                case .commonName: "CN"
                case .organization: "O"
                case .organizationalUnit: "OU"
                case .country: "C"
                case .state: "ST"
                case .city: "L"
                case .emailAddress: "emailAddress"
                default: "?"
                }
            return "\(key)=\(name.value)"
        }
        return parts.joined(separator: ",")
    }

    /// Whether `channel` is an HTTP/2 stream: its parent is the connection, whose parent is the listening socket
    /// (an HTTP/1.1 connection's parent is the listening socket itself).
    static func isHTTP2(_ channel: any Channel) -> Bool {
        channel.parent?.parent != nil
    }

    /// Looks at `channel` (an HTTP/1.1 connection, or an HTTP/2 stream whose parent is the connection).
    static func inspect(_ channel: any Channel, tls: Bool) async -> StreamConnection {
        let isHTTP2 = isHTTP2(channel)
        let connection = isHTTP2 ? (channel.parent ?? channel) : channel
        var certificate: NIOSSLCertificate?
        var version: String?
        if tls {
            certificate = try? await connection.nioSSL_peerCertificate().get()
            version = (try? await connection.nioSSL_tlsVersion().get()).flatMap { $0 }.map(Self.name)
        }
        return StreamConnection(
            isHTTP2: isHTTP2, isTLS: tls, tlsVersion: version, certificate: certificate,
            peer: connection.remotePeerDescription)
    }

    private static func name(_ version: TLSVersion) -> String {
        switch version {
        case .tlsv1: "TLSv1"
        case .tlsv11: "TLSv1.1"
        case .tlsv12: "TLSv1.2"
        case .tlsv13: "TLSv1.3"
        }
    }
}
