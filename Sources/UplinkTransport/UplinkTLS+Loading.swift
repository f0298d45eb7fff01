import NIOSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

import UplinkCore
import UplinkFiles

/// Why the files of `uplink.tls` cannot be used: which setting, which file, what is wrong.
public struct UplinkTLSProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// The key under `uplink.tls` the problem belongs to (`ca_file`, `cert_file`, `key_file`), or the environment
    /// variable (`SSL_CERT_FILE`, `SSL_CERT_DIR`).
    public var key: String
    /// What is wrong, naming the file.
    public var message: String
    /// True when the file could not be read at all (missing, no permission, empty); false when its contents are
    /// wrong.
    public var unreadable: Bool

    public init(key: String, message: String, unreadable: Bool = false) {
        self.key = key
        self.message = message
        self.unreadable = unreadable
    }

    public var description: String { "\(key): \(message)" }
}

/// Certificates and keys of `uplink.tls`, read from disk and turned into a swift-nio-ssl configuration.
struct TLSMaterial: Sendable {
    /// What AHC uses for the next connection.
    var configuration: TLSConfiguration
    /// The statuses of the files read, in `UplinkTLS.watchedFiles` order (nil: the file could not be stat'ed). They
    /// follow symbolic links, so a swapped link counts as a change; any change means the file was replaced or
    /// rewritten.
    var identities: [FileStatus?]
    /// The client certificate's end of validity (seconds since the epoch), when one is configured.
    var clientCertificateNotValidAfter: Int?

    /// Largest certificate or key file read.
    static let maximumFileBytes = 4 << 20

    /// Reads every file and checks that they form a usable configuration: certificates parse, the key parses and
    /// belongs to the certificate, and swift-nio-ssl accepts the whole (the same check a connection makes).
    static func load(_ settings: UplinkTLS) throws(UplinkTLSProblem) -> TLSMaterial {
        let identities = settings.watchedFiles.map { FileStatus(path: $0.path) }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = settings.minimumVersion == .tls13 ? .tlsv13 : .tlsv12
        if let caFile = settings.caFile {
            let authorities = try certificates(in: caFile, key: "ca_file", what: "CA bundle")
            if settings.useSystemTrust {
                configuration.trustRoots = .default
                configuration.additionalTrustRoots = [.certificates(authorities)]
            } else {
                configuration.trustRoots = .certificates(authorities)
            }
        } else if settings.environmentCAFile != nil || !settings.environmentCADirectories.isEmpty {
            // As OpenSSL: SSL_CERT_FILE replaces the system bundle, SSL_CERT_DIR the system directory. swift-nio-ssl
            // takes one hashed directory (as the trust roots) plus bundles (as additional roots).
            let file = settings.environmentCAFile ?? UplinkTLS.systemCAFile
            let directory = settings.environmentCADirectories.first ?? UplinkTLS.systemCADirectory
            if settings.environmentCADirectories.first != nil, !isDirectory(directory) {
                throw UplinkTLSProblem(key: "SSL_CERT_DIR", message: "'\(directory)' is not a directory")
            }
            let authorities: [NIOSSLCertificate]
            if settings.environmentCAFile != nil {
                authorities = try certificates(in: file, key: "SSL_CERT_FILE", what: "CA bundle")
            } else {
                authorities = (try? NIOSSLCertificate.fromPEMBytes(contents(of: file, key: "SSL_CERT_FILE"))) ?? []
            }
            configuration.trustRoots = isDirectory(directory) ? .file(directory) : .certificates([])
            if !authorities.isEmpty { configuration.additionalTrustRoots = [.certificates(authorities)] }
        }
        var notValidAfter: Int?
        switch (settings.certificateFile, settings.keyFile) {
        case (let certificateFile?, let keyFile?):
            let chain = try certificates(in: certificateFile, key: "cert_file", what: "certificate")
            let key = try privateKey(in: keyFile)
            configuration.certificateChain = chain.map { .certificate($0) }
            configuration.privateKey = .privateKey(key)
            notValidAfter = Int(chain[0].notValidAfter)
        case (nil, nil):
            break
        case (nil, _?):
            throw UplinkTLSProblem(key: "key_file", message: "'key_file' is set without 'cert_file'")
        case (_?, nil):
            throw UplinkTLSProblem(key: "cert_file", message: "'cert_file' is set without 'key_file'")
        }
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            let reason = TLSErrorText.reasons(of: error)
            // The key parsed above, so swift-nio-ssl refusing it means it does not match the certificate.
            if configuration.privateKey != nil,
                (error as? NIOSSLError) == .failedToLoadPrivateKey || reason.contains("KEY_VALUES_MISMATCH")
            {
                throw UplinkTLSProblem(
                    key: "key_file",
                    message: "the key in '\(settings.keyFile ?? "")' does not belong to the certificate in '\(settings.certificateFile ?? "")'")
            }
            throw UplinkTLSProblem(key: settings.keyFile != nil ? "key_file" : "ca_file", message: "unusable TLS settings: \(reason)")
        }
        return TLSMaterial(configuration: configuration, identities: identities, clientCertificateNotValidAfter: notValidAfter)
    }

    private static func certificates(in path: String, key: String, what: String) throws(UplinkTLSProblem) -> [NIOSSLCertificate] {
        let bytes = try contents(of: path, key: key)
        let found: [NIOSSLCertificate]
        do {
            found = try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch {
            throw UplinkTLSProblem(key: key, message: "'\(path)' is not a PEM \(what): \(TLSErrorText.reasons(of: error))")
        }
        guard !found.isEmpty else {
            throw UplinkTLSProblem(key: key, message: "'\(path)' holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        return found
    }

    private static func privateKey(in path: String) throws(UplinkTLSProblem) -> NIOSSLPrivateKey {
        let bytes = try contents(of: path, key: "key_file")
        do {
            return try NIOSSLPrivateKey(bytes: bytes, format: .pem)
        } catch {
            throw UplinkTLSProblem(
                key: "key_file",
                message: "'\(path)' is not an unencrypted PEM private key: \(TLSErrorText.reasons(of: error))")
        }
    }

    /// The whole file, or a problem with the system's error text.
    static func contents(of path: String, key: String) throws(UplinkTLSProblem) -> [UInt8] {
        switch WholeFile.read(path: path, limit: maximumFileBytes) {
        case .success(let contents):
            if contents.isEmpty { throw UplinkTLSProblem(key: key, message: "'\(path)' is empty", unreadable: true) }
            return contents
        case .failure(let failure):
            guard case .system(let code) = failure.reason else {
                throw UplinkTLSProblem(key: key, message: "'\(path)' is larger than \(maximumFileBytes) bytes")
            }
            throw UplinkTLSProblem(key: key, message: "cannot read '\(path)': \(FileError.text(errno: code))", unreadable: true)
        }
    }

    static func isDirectory(_ path: String) -> Bool {
        FileStatus(path: path)?.isDirectory ?? false
    }
}

extension UplinkTLS {
    /// The files whose change on disk triggers a reload, with the key that names each.
    var watchedFiles: [(key: String, path: String)] {
        var files: [(String, String)] = []
        if let caFile { files.append(("ca_file", caFile)) }
        if let certificateFile { files.append(("cert_file", certificateFile)) }
        if let keyFile { files.append(("key_file", keyFile)) }
        if caFile == nil, let environmentCAFile { files.append(("SSL_CERT_FILE", environmentCAFile)) }
        return files
    }

    /// Reads and checks every file now: nil when they form a usable configuration, else the first problem.
    /// `uplink validate` and the agent's configuration loading use this, so bad files are configuration errors.
    public func check() -> UplinkTLSProblem? {
        do throws(UplinkTLSProblem) {
            _ = try TLSMaterial.load(self)
            return nil
        } catch {
            return error
        }
    }
}
