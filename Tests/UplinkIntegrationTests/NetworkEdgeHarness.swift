import UplinkTestSupport
import UplinkTransport

/// The agent's TLS settings from the shared test authority.
extension TestPKI {
    /// Agent TLS settings trusting this CA and presenting the client certificate `agent-1`.
    var agentTLS: UplinkTLS {
        UplinkTLS(caFile: authority.certificateFile, certificateFile: agent.certificateFile, keyFile: agent.keyFile)
    }

    /// `agentTLS` with TLS 1.3 at the least.
    var mutualTLS: UplinkTLS {
        var tls = agentTLS
        tls.minimumVersion = .tls13
        return tls
    }
}
