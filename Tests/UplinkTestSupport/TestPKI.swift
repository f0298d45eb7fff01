import UplinkCollector

/// A private certificate authority made with openssl, with the certificates the TLS tests present: a server
/// certificate for `localhost`, 127.0.0.1 and ::1, and an agent's client certificate (CN `agent-1`, DNS names
/// `agent-1` and `agent-1.fleet`). Certificates that only some tests need are issued on demand.
public struct TestPKI: Sendable {
    /// The authority that issued `server` and `agent`.
    public let authority: TestCertificateAuthority
    /// CN `localhost`, for `localhost`, 127.0.0.1 and ::1.
    public let server: TestCertificateAuthority.Certificate
    /// A client certificate: CN `agent-1`, DNS names `agent-1` and `agent-1.fleet`.
    public let agent: TestCertificateAuthority.Certificate
    private let directory: String

    /// Creates the authority and the two certificates in `directory`.
    public init(directory: String) async throws {
        self.directory = directory
        authority = try await TestCertificateAuthority.create(in: directory + "/ca")
        server = try await authority.issue(commonName: "localhost", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"])
        agent = try await authority.issue(commonName: "agent-1", dnsNames: ["agent-1", "agent-1.fleet"], usage: .client)
    }

    /// Creates the authority and the two certificates in a fresh temporary directory named after `name`.
    public init(_ name: String) async throws {
        try await self.init(directory: try TestDirectories.make("pki-\(name)"))
    }

    /// A client certificate for `agent-1` from this authority that expired yesterday.
    public func expiredAgent() async throws -> TestCertificateAuthority.Certificate {
        try await authority.issue(commonName: "agent-1", usage: .client, expired: true)
    }

    /// A client certificate for `agent-1` from another authority.
    public func foreignAgent() async throws -> TestCertificateAuthority.Certificate {
        let other = try await TestCertificateAuthority.create(in: directory + "/other-ca", name: "other-ca")
        return try await other.issue(commonName: "agent-1", usage: .client)
    }
}

extension TestPKI {
    /// The collector's TLS setting with this PKI: it presents `server`; with client authentication it checks client
    /// certificates against this authority.
    public func collectorTLS(
        clientAuthentication: CollectorTLS.ClientAuthentication = .none, agentIdentity: CollectorTLS.AgentIdentity = .header
    ) -> CollectorTLS {
        CollectorTLS(
            certificateFile: server.certificateFile, keyFile: server.keyFile,
            clientCAFile: clientAuthentication == .none ? nil : authority.certificateFile,
            clientAuthentication: clientAuthentication, agentIdentity: agentIdentity)
    }
}
