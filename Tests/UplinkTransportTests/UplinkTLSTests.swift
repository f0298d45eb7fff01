import Foundation
import Logging
import NIOSSL
import Testing
import UplinkTestSupport
@testable import UplinkTransport

/// Loading and reloading `uplink.tls` files made with the real openssl.
@Suite("Uplink TLS files")
struct UplinkTLSTests {
    let directory: String
    let ca: TestCertificateAuthority
    let client: TestCertificateAuthority.Certificate

    init() async throws {
        let pki = try await TestPKI("uplink-tls")
        (directory, ca, client) = (pki.authority.directory, pki.authority, pki.agent)
    }

    @Test("A CA bundle with a matching certificate and key loads; the CA replaces the system store")
    func validFiles() throws {
        let settings = UplinkTLS(caFile: ca.certificateFile, certificateFile: client.certificateFile, keyFile: client.keyFile, minimumVersion: .tls13)
        #expect(settings.check() == nil)
        let material = try TLSMaterial.load(settings)
        #expect(material.configuration.minimumTLSVersion == .tlsv13)
        guard case .certificates(let roots) = material.configuration.trustRoots else {
            Issue.record("expected only the CA file's certificates as trust roots")
            return
        }
        #expect(roots.count == 1)
        #expect(material.configuration.additionalTrustRoots.isEmpty)
        #expect(material.configuration.certificateChain.count == 1)
    }

    @Test("use_system_trust keeps the system store and adds the CA")
    func addsToSystemStore() throws {
        let material = try TLSMaterial.load(UplinkTLS(caFile: ca.certificateFile, useSystemTrust: true))
        #expect(material.configuration.trustRoots == .default)
        #expect(material.configuration.additionalTrustRoots.count == 1)
    }

    @Test("SSL_CERT_FILE and SSL_CERT_DIR replace the system bundle and directory when no ca_file is set")
    func trustEnvironment() throws {
        let settings = UplinkTLS().withTrustEnvironment { ["SSL_CERT_FILE": ca.certificateFile, "SSL_CERT_DIR": directory][$0] }
        #expect(settings.environmentCAFile == ca.certificateFile)
        #expect(settings.environmentCADirectories == [directory])
        let material = try TLSMaterial.load(settings)
        #expect(material.configuration.trustRoots == .file(directory))
        #expect(material.configuration.additionalTrustRoots.count == 1)

        let missing = UplinkTLS().withTrustEnvironment { $0 == "SSL_CERT_FILE" ? directory + "/nope.pem" : nil }
        #expect(missing.check()?.key == "SSL_CERT_FILE")
        #expect(missing.check()?.unreadable == true)
        // With ca_file, the environment does not matter.
        let withCA = UplinkTLS(caFile: ca.certificateFile).withTrustEnvironment { $0 == "SSL_CERT_FILE" ? "/nonexistent" : nil }
        #expect(withCA.check() == nil)
    }

    @Test("Missing, empty, non-PEM files and a key of another certificate are problems naming the key and the file")
    func problems() async throws {
        let missing = directory + "/missing.pem"
        #expect(UplinkTLS(caFile: missing).check() == UplinkTLSProblem(
            key: "ca_file", message: "cannot read '\(missing)': No such file or directory", unreadable: true))

        let empty = directory + "/empty.pem"
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        #expect(UplinkTLS(caFile: empty).check() == UplinkTLSProblem(key: "ca_file", message: "'\(empty)' is empty", unreadable: true))

        let garbage = directory + "/garbage.pem"
        try "not a certificate\n".write(toFile: garbage, atomically: true, encoding: .utf8)
        let notPEM = UplinkTLS(caFile: garbage).check()
        #expect(notPEM?.key == "ca_file")
        #expect(notPEM?.message.hasPrefix("'\(garbage)' ") == true, "\(String(describing: notPEM))")

        // The key file holding a certificate.
        let keyIsCertificate = UplinkTLS(certificateFile: client.certificateFile, keyFile: client.certificateFile).check()
        #expect(keyIsCertificate?.key == "key_file")
        #expect(keyIsCertificate?.message.contains("is not an unencrypted PEM private key") == true, "\(String(describing: keyIsCertificate))")

        let other = try await ca.issue(commonName: "agent-2", usage: .client)
        let mismatch = UplinkTLS(certificateFile: client.certificateFile, keyFile: other.keyFile).check()
        #expect(mismatch == UplinkTLSProblem(
            key: "key_file",
            message: "the key in '\(other.keyFile)' does not belong to the certificate in '\(client.certificateFile)'"))

        #expect(UplinkTLS(certificateFile: client.certificateFile).check()?.key == "cert_file")
        #expect(UplinkTLS(keyFile: client.keyFile).check()?.key == "key_file")
    }

    @Test("The reloader reads rotated files before the next connection and keeps the last good ones when a rotation is broken")
    func reload() async throws {
        let settings = UplinkTLS(caFile: ca.certificateFile, certificateFile: client.certificateFile, keyFile: client.keyFile)
        let reloader = TLSReloader(settings: settings, logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        let first = try reloader.configuration()
        // Unchanged files: the same configuration, nothing read again.
        #expect(try reloader.configuration().bestEffortEquals(first))
        #expect(reloader.reloads == 0)

        let rotated = try await ca.issue(commonName: "agent-1", usage: .client)
        #expect(rotated.certificateFile == client.certificateFile)
        let second = try reloader.configuration()
        #expect(reloader.reloads == 1)
        #expect(!second.bestEffortEquals(first))
        #expect(second.certificateChain == [.certificate(try NIOSSLCertificate.fromPEMFile(client.certificateFile)[0])])

        // Half a rotation: a new certificate whose key has not arrived yet. The previous pair stays in use.
        let stray = try await ca.issue(commonName: "agent-1", usage: .client, fileStem: "stray")
        try FileManager.default.removeItem(atPath: client.certificateFile)
        try FileManager.default.copyItem(atPath: stray.certificateFile, toPath: client.certificateFile)
        let third = try reloader.configuration()
        #expect(third.bestEffortEquals(second))
        #expect(reloader.reloads == 1)
        // The key arrives: now the pair matches and is used.
        try FileManager.default.removeItem(atPath: client.keyFile)
        try FileManager.default.copyItem(atPath: stray.keyFile, toPath: client.keyFile)
        let fourth = try reloader.configuration()
        #expect(reloader.reloads == 2)
        #expect(fourth.certificateChain == [.certificate(try NIOSSLCertificate.fromPEMFile(stray.certificateFile)[0])])
    }

    @Test("A reloader whose files never loaded fails each connection with the problem")
    func neverLoaded() {
        let reloader = TLSReloader(settings: UplinkTLS(caFile: directory + "/absent.pem"), logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        #expect(throws: UplinkTLSProblem(
            key: "ca_file", message: "cannot read '\(directory)/absent.pem': No such file or directory", unreadable: true)
        ) { try reloader.configuration() }
    }
}

@Suite("TLS error text and rejection bodies")
struct TLSErrorTextTests {
    @Test func reasonCodes() {
        let text = "handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 268435581 error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED at /x/handshake.cc:393]))"
        #expect(TLSErrorText.reasonCodes(in: text) == ["CERTIFICATE_VERIFY_FAILED"])
        #expect(TLSErrorText.reasonCodes(in: "nothing here").isEmpty)
    }

    @Test("nginx's 400 page becomes one short line")
    func nginxPage() {
        let page = """
            <html>\r
            <head><title>400 No required SSL certificate was sent</title></head>\r
            <body>\r
            <center><h1>400 Bad Request</h1></center>\r
            <center>No required SSL certificate was sent</center>\r
            <hr><center>nginx/1.22.1</center>\r
            </body>\r
            </html>\r

            """
        #expect(RejectionDetail.text(of: Array(page.utf8)) == "400 Bad Request No required SSL certificate was sent")
        #expect(RejectionDetail.text(of: Array("unauthorized\n\u{1b}[31m".utf8)) == "unauthorized [31m")
        #expect(RejectionDetail.text(of: []) == nil)
    }
}
