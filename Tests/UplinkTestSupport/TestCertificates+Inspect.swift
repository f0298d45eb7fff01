import Foundation

extension TestCertificateAuthority.Certificate {
    /// The certificate's serial number in upper-case hex, as nginx logs it (`$ssl_client_serial`).
    public func serialNumber() async throws -> String {
        let output = try await OpenSSL.outputAndErrors(["x509", "-in", certificateFile, "-noout", "-serial"])
        // "serial=1A2B…"
        guard let equals = output.firstIndex(of: "=") else { throw OpenSSL.Failure(description: "no serial in '\(output)'") }
        return output[output.index(after: equals)...].trimmingCharacters(in: .whitespacesAndNewlines).uppercased()
    }
}
