import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOSSL
import ServiceLifecycle
import Synchronization
import Testing
import UplinkCollector
import UplinkTestSupport

/// Runs a collector whose log goes to `log` for the duration of `body`, then shuts it down gracefully.
func withEdgeCollector<T>(
    _ configuration: CollectorConfiguration, log: LogCapture, _ body: (Collector, Int) async throws -> T
) async throws -> T {
    try await withCollector(configuration, logger: log.logger, body)
}

/// A client's TLS settings from the shared test authority.
extension TestPKI {
    /// A client configuration that trusts this CA and presents `certificate` if given.
    func clientTLS(presenting certificate: TestCertificateAuthority.Certificate? = nil) throws -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(authority.certificateFile))
        if let certificate {
            tls.certificateChain = try NIOSSLCertificate.fromPEMFile(certificate.certificateFile).map { .certificate($0) }
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(file: certificate.keyFile, format: .pem))
        }
        return tls
    }
}

/// Runs `body` with an HTTP client using `tls`; `http1Only` keeps it from offering h2.
@discardableResult
func withTLSClient<T>(_ tls: TLSConfiguration, http1Only: Bool = false, _ body: (HTTPClient) async throws -> T) async throws -> T {
    var configuration = HTTPClient.Configuration()
    configuration.tlsConfiguration = tls
    configuration.httpVersion = http1Only ? .http1Only : .automatic
    // Generous: under a full suite beside a build, a loopback TLS handshake (and HTTP/2's settings) once took over
    // 10 s; how long a connection takes is not what these tests check.
    configuration.timeout = .init(connect: .seconds(30), read: nil)
    // One handshake per request: a refused one fails the request instead of being retried until its deadline.
    configuration.connectionPool.retryConnectionEstablishment = false
    return try await withClient(configuration, body)
}

/// `GET /healthz` over `client`; whether it answered `200 ok`.
func healthzAnswers(_ client: HTTPClient, port: Int, scheme: String = "http") async -> Bool {
    do {
        let response = try await client.execute(
            HTTPClientRequest(url: "\(scheme)://127.0.0.1:\(port)/healthz"), timeout: peerRequestTimeout)
        let body = try await response.body.collect(upTo: 1024)
        return response.status == .ok && String(buffer: body) == "ok"
    } catch {
        return false
    }
}
