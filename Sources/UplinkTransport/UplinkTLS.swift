/// How the uplink sets up TLS for an `https://` collector (`uplink.tls`).
///
/// Trust: with `caFile` the collector's chain must lead to a certificate in that bundle, and ONLY to those (a fleet
/// with a private CA should not also trust every public CA); `useSystemTrust` adds the system store back. Without
/// `caFile` the system store is used: `/etc/ssl/certs/ca-certificates.crt` and `/etc/ssl/certs`, or what
/// `SSL_CERT_FILE` / `SSL_CERT_DIR` name instead (as OpenSSL does; captured in `environmentCAFile` /
/// `environmentCADirectories`).
///
/// Files are read when the uplink starts and read again before a new connection when any of them changed on disk
/// (device, inode, size or modification time), so rotated certificates are used without a restart.
public struct UplinkTLS: Sendable, Equatable {
    /// The lowest TLS version offered. TLS 1.3 is always preferred when the collector supports it.
    public enum MinimumVersion: String, Sendable, Equatable, CaseIterable {
        case tls12 = "1.2"
        case tls13 = "1.3"
    }

    /// `uplink.tls.ca_file` (path): PEM bundle of the certificate authorities the collector's certificate must chain
    /// to; replaces the system store unless `useSystemTrust`. Default: none (the system store).
    public var caFile: String?
    /// `uplink.tls.use_system_trust` (bool): with `ca_file`, also trust the system store. Default `false`.
    public var useSystemTrust: Bool
    /// `uplink.tls.cert_file` (path): PEM client certificate (optionally followed by its intermediates) presented to
    /// the collector (mTLS). Requires `keyFile`. Default: none.
    public var certificateFile: String?
    /// `uplink.tls.key_file` (path): PEM private key of `certificateFile`. Default: none.
    public var keyFile: String?
    /// `uplink.tls.server_name` (host name): the name sent in SNI and that the collector's certificate must carry,
    /// when it differs from the URL's host (e.g. the URL names an IP address). Default: the URL's host.
    public var serverName: String?
    /// `uplink.tls.min_version` (`1.2` or `1.3`). Default `1.2`.
    public var minimumVersion: MinimumVersion
    /// `SSL_CERT_FILE` when set: replaces the system CA bundle file (used only without `caFile`).
    public var environmentCAFile: String?
    /// `SSL_CERT_DIR` when set (colon-separated): replaces the system CA directory (used only without `caFile`). Only
    /// the first directory is used.
    public var environmentCADirectories: [String]

    public init(
        caFile: String? = nil, useSystemTrust: Bool = false, certificateFile: String? = nil, keyFile: String? = nil,
        serverName: String? = nil, minimumVersion: MinimumVersion = .tls12, environmentCAFile: String? = nil,
        environmentCADirectories: [String] = []
    ) {
        self.caFile = caFile
        self.useSystemTrust = useSystemTrust
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.serverName = serverName
        self.minimumVersion = minimumVersion
        self.environmentCAFile = environmentCAFile
        self.environmentCADirectories = environmentCADirectories
    }

    /// These settings with `SSL_CERT_FILE` and `SSL_CERT_DIR` taken from `environment` (empty values are ignored).
    public func withTrustEnvironment(_ environment: (String) -> String?) -> UplinkTLS {
        var copy = self
        if let file = environment("SSL_CERT_FILE"), !file.isEmpty { copy.environmentCAFile = file }
        if let directories = environment("SSL_CERT_DIR") {
            copy.environmentCADirectories = directories.split(separator: ":").map(String.init)
        }
        return copy
    }

    /// The system store's bundle file and directory on Debian, Ubuntu, Alpine and Arch (what swift-nio-ssl uses).
    static let systemCAFile = "/etc/ssl/certs/ca-certificates.crt"
    static let systemCADirectory = "/etc/ssl/certs"
}
