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

/// Runs the `openssl` command line tool as a ``ChildProcess`` (`posix_spawn`), whose exit the caller awaits without
/// holding a thread. Not Foundation's `Process`: its `run()` on Linux lists `/proc/self/fd` and copies each entry's
/// whole 256-byte name field, reading past glibc's buffer; with the test process's thousand-odd descriptors that
/// crashed a full run (swift-corelibs-foundation, fixed upstream in PR 5472 but not in this toolchain).
enum OpenSSL {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func run(_ arguments: [String]) async throws {
        _ = try await outputAndErrors(arguments)
    }

    /// Runs `openssl` with `arguments` and returns what it printed (standard output and error together); throws
    /// with that text when it fails.
    static func outputAndErrors(_ arguments: [String]) async throws -> String {
        let directory = try TestDirectories.make("uplink-openssl")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let outputPath = directory + "/output.txt"
        let process = try ChildProcess([try path()] + arguments, outputPath: outputPath)
        let exited = await process.waitForExit(seconds: 60)
        if !exited { await process.terminate(grace: 1) }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // The raw `waitpid` status: 0 is an exit with code 0, and nothing else.
        guard exited, let status = process.exitStatus, status == 0 else {
            let how = exited ? "ended with wait status \(process.exitStatus.map(String.init) ?? "?")" : "did not finish in 60 s"
            throw Failure(description: "openssl \(arguments.joined(separator: " ")) \(how): \(output)")
        }
        return output
    }

    static func path() throws -> String {
        for candidate in ["/usr/bin/openssl", "/usr/local/bin/openssl", "/bin/openssl"]
        where FileManager.default.isExecutableFile(atPath: candidate) {
            return candidate
        }
        throw Failure(description: "the openssl command is not installed (Debian: apt-get install openssl)")
    }
}
