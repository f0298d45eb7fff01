import Foundation

extension TestCertificateAuthority.Certificate {
    /// The certificate's serial number in upper-case hex, as nginx logs it (`$ssl_client_serial`).
    public func serialNumber() async throws -> String {
        let output = try await OpenSSL.output(["x509", "-in", certificateFile, "-noout", "-serial"])
        // "serial=1A2B…"
        guard let equals = output.firstIndex(of: "=") else { throw OpenSSL.Failure(description: "no serial in '\(output)'") }
        return output[output.index(after: equals)...].trimmingCharacters(in: .whitespacesAndNewlines).uppercased()
    }
}

extension OpenSSL {
    /// Runs `openssl` and returns what it printed on standard output.
    static func output(_ arguments: [String]) async throws -> String {
        try await DedicatedThreads.blocking.run { try outputBlocking(arguments) }
    }

    private static func outputBlocking(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try path())
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
