import Foundation

/// A private certificate authority made with the real `openssl` command in a test's temporary directory, and the
/// server and client certificates it issues. Keys are P-256; files are PEM.
///
/// ```swift
/// let ca = try await TestCertificateAuthority.create(in: directory)
/// let server = try await ca.issue(commonName: "localhost", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"])
/// let client = try await ca.issue(commonName: "agent-1", dnsNames: ["agent-1"], usage: .client)
/// let expired = try await ca.issue(commonName: "agent-1", usage: .client, expired: true)
/// ```
public struct TestCertificateAuthority: Sendable {
    /// The directory holding every file of this authority and its certificates.
    public let directory: String
    /// The authority's subject common name.
    public let name: String
    /// The authority's self-signed certificate (what a peer trusts).
    public let certificateFile: String
    /// The authority's private key.
    public let keyFile: String

    /// What a certificate is for (its extended key usage).
    public enum Usage: Sendable {
        case server
        case client
    }

    /// A certificate and its key, both PEM files.
    public struct Certificate: Sendable {
        public let certificateFile: String
        public let keyFile: String
    }

    /// Creates a new self-signed authority in `directory` (created if missing), valid for `validDays` days.
    public static func create(in directory: String, name: String = "uplink-test-ca", validDays: Int = 3) async throws
        -> TestCertificateAuthority
    {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let stem = directory + "/" + fileStem(name)
        try await OpenSSL.run([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", stem + ".key", "-out", stem + ".pem", "-subj", "/CN=\(name)", "-days", String(validDays),
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
        return TestCertificateAuthority(
            directory: directory, name: name, certificateFile: stem + ".pem", keyFile: stem + ".key")
    }

    /// Issues a certificate signed by this authority.
    ///
    /// - Parameters:
    ///   - commonName: The subject CN.
    ///   - dnsNames / ipAddresses: Subject alternative names.
    ///   - usage: Server or client authentication.
    ///   - expired: When true, the certificate's validity ended a day ago.
    ///   - fileStem: Base name of the files in `directory`; by default derived from the common name and usage, so
    ///     issuing the same name again (a rotation) overwrites the files in place.
    public func issue(
        commonName: String, dnsNames: [String] = [], ipAddresses: [String] = [], uris: [String] = [],
        usage: Usage = .server, expired: Bool = false, fileStem stemName: String? = nil
    ) async throws -> Certificate {
        let stem = directory + "/" + (stemName ?? Self.fileStem("\(commonName)-\(usage)\(expired ? "-expired" : "")"))
        var extensions = ["basicConstraints=CA:FALSE"]
        extensions.append(usage == .server ? "extendedKeyUsage=serverAuth" : "extendedKeyUsage=clientAuth")
        let names = dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" } + uris.map { "URI:\($0)" }
        if !names.isEmpty { extensions.append("subjectAltName=" + names.joined(separator: ",")) }
        let extensionFile = stem + ".ext"
        try (extensions.joined(separator: "\n") + "\n").write(toFile: extensionFile, atomically: true, encoding: .utf8)
        // Written next to the final files and renamed over them, so a reader never sees half a rotation.
        let (newKey, newCertificate) = (stem + ".key.new", stem + ".pem.new")
        try await OpenSSL.run([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", newKey,
            "-out", stem + ".csr", "-subj", "/CN=\(commonName)",
        ])
        try await OpenSSL.run([
            "x509", "-req", "-in", stem + ".csr", "-CA", certificateFile, "-CAkey", keyFile, "-CAcreateserial",
            "-out", newCertificate, "-days", expired ? "-1" : "2", "-extfile", extensionFile,
        ])
        try Self.replace(stem + ".key", with: newKey)
        try Self.replace(stem + ".pem", with: newCertificate)
        return Certificate(certificateFile: stem + ".pem", keyFile: stem + ".key")
    }

    private static func replace(_ path: String, with newPath: String) throws {
        guard rename(newPath, path) == 0 else {
            throw OpenSSL.Failure(description: "rename \(newPath) -> \(path) failed: errno \(errno)")
        }
    }

    private static func fileStem(_ name: String) -> String {
        String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." ? $0 : "_" })
    }
}

/// Runs the `openssl` command line tool, on ``DedicatedThreads/blocking``: waiting for it must not hold a thread of the
/// global executor.
enum OpenSSL {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func run(_ arguments: [String]) async throws {
        try await DedicatedThreads.blocking.run { try runBlocking(arguments) }
    }

    private static func runBlocking(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try path())
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(
                description: "openssl \(arguments.joined(separator: " ")) exited \(process.terminationStatus): "
                    + String(decoding: message, as: UTF8.self))
        }
    }

    static func path() throws -> String {
        for candidate in ["/usr/bin/openssl", "/usr/local/bin/openssl", "/bin/openssl"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw Failure(description: "the openssl command is not installed (Debian: apt-get install openssl)")
    }
}
