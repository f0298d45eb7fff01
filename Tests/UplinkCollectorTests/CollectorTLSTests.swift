import AsyncHTTPClient
import Foundation
import NIOCore
import NIOSSL
import Testing
import UplinkCollector
import UplinkTestSupport

/// TLS and mutual TLS on the collector, with a private CA made by openssl, over real loopback connections.
@Suite("Collector TLS", .serialized, .timeLimit(.minutes(3)))
struct CollectorTLSTests {
    private func configuration(_ directory: String, tls: CollectorTLS) -> CollectorConfiguration {
        var configuration = testConfiguration(directory + "/data")
        configuration.tls = tls
        return configuration
    }

    @Test("TLS 1.3 with a private CA: HTTP/2 through ALPN, records stored exactly once, the stream described")
    func http2OverTLS() async throws {
        try await withTemporaryDirectory { directory in
            let pki = try await TestPKI(directory: directory)
            let log = LogCapture(level: .info)
            try await withEdgeCollector(configuration(directory, tls: pki.collectorTLS()), log: log) { collector, port in
                try await withTLSClient(try pki.clientTLS()) { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "tls-agent", epoch: "4", scheme: "https")
                    #expect(connection.response.version == .http2)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body(1...100))
                    try await connection.waitForAck(100)
                    let open = collector.openStreams()
                    #expect(open.count == 1)
                    #expect(open.first?.httpVersion == "HTTP/2")
                    #expect(open.first?.tlsVersion == "TLSv1.3")
                    #expect(open.first?.certificateSubject == nil)
                    #expect(try await connection.close().isEmpty)
                    #expect(await healthzAnswers(client, port: port, scheme: "https"))
                }
                let edge = collector.edgeStatistics()
                #expect(edge.http2Streams == 1)
                #expect(edge.tlsStreams == 1)
                #expect(edge.tlsHandshakeFailures == 0)
            }
            #expect(try storedSequences(directory + "/data", agent: "tls-agent", epoch: 4) == Array(1...100))
            #expect(!log.entries(containing: "Collector listening").isEmpty)
        }
    }

    @Test("A client that offers only http/1.1 is served HTTP/1.1 over TLS")
    func http1OverTLS() async throws {
        try await withTemporaryDirectory { directory in
            let pki = try await TestPKI(directory: directory)
            try await withEdgeCollector(configuration(directory, tls: pki.collectorTLS()), log: LogCapture(level: .info)) { collector, port in
                try await withTLSClient(try pki.clientTLS(), http1Only: true) { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "old-agent", epoch: "1", scheme: "https")
                    #expect(connection.response.version == .http1_1)
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body(1...10))
                    try await connection.waitForAck(10)
                    #expect(collector.openStreams().first?.httpVersion == "HTTP/1.1")
                    #expect(try await connection.close().isEmpty)
                }
                #expect(collector.edgeStatistics().http2Streams == 0)
                #expect(collector.edgeStatistics().tlsStreams == 1)
            }
            #expect(try storedSequences(directory + "/data", agent: "old-agent", epoch: 1) == Array(1...10))
        }
    }

    @Test("mTLS required with agent_identity certificate: the certificate's CN and DNS name are accepted, its subject kept")
    func mutualTLSAccepted() async throws {
        try await withTemporaryDirectory { directory in
            let pki = try await TestPKI(directory: directory)
            let tls = pki.collectorTLS(clientAuthentication: .required, agentIdentity: .certificate)
            try await withEdgeCollector(configuration(directory, tls: tls), log: LogCapture(level: .info)) { collector, port in
                try await withTLSClient(try pki.clientTLS(presenting: pki.agent)) { client in
                    for (agent, epoch) in [("agent-1", "1"), ("agent-1.fleet", "2")] {
                        let connection = try await AgentConnection.open(client, port: port, agent: agent, epoch: epoch, scheme: "https")
                        #expect(connection.response.status == .ok)
                        #expect(try await connection.nextAck() == .resume(0))
                        connection.send(body(1...5))
                        try await connection.waitForAck(5)
                        let open = collector.openStreams().first { $0.agent == agent }
                        #expect(open?.certificateSubject == "CN=agent-1")
                        #expect(try await connection.close().isEmpty)
                    }
                }
                #expect(collector.edgeStatistics().identityRefused == 0)
            }
            #expect(try storedSequences(directory + "/data", agent: "agent-1", epoch: 1) == Array(1...5))
            #expect(try storedSequences(directory + "/data", agent: "agent-1.fleet", epoch: 2) == Array(1...5))
        }
    }

    @Test("mTLS required: no certificate, an expired one, one from another CA are refused, each with a log line")
    func mutualTLSRefused() async throws {
        try await withTemporaryDirectory { directory in
            let pki = try await TestPKI(directory: directory)
            let log = LogCapture(level: .info)
            let tls = pki.collectorTLS(clientAuthentication: .required)
            try await withEdgeCollector(configuration(directory, tls: tls), log: log) { collector, port in
                let cases: [(TestCertificateAuthority.Certificate?, String)] = [
                    (nil, "no certificate"), (try await pki.expiredAgent(), "expired"), (try await pki.foreignAgent(), "other CA"),
                ]
                for (certificate, name) in cases {
                    let failuresBefore = collector.edgeStatistics().tlsHandshakeFailures
                    let linesBefore = log.entries(containing: "Refused a TLS connection").count
                    try await withTLSClient(try pki.clientTLS(presenting: certificate)) { client in
                        await #expect(throws: (any Error).self, "\(name) must be refused") {
                            let connection = try await AgentConnection.open(
                                client, port: port, agent: "agent-1", epoch: "1", scheme: "https", timeout: .seconds(2))
                            // TLS 1.3: the client may finish its side first; the refusal then ends the response.
                            _ = try await connection.nextAck()
                            connection.send(body(1...3))
                            _ = try await connection.close()
                        }
                    }
                    let refused = await eventually { log.entries(containing: "Refused a TLS connection").count > linesBefore }
                    #expect(refused, "\(name): no log line")
                    let line = log.entries(containing: "Refused a TLS connection")[linesBefore]
                    #expect(line.level == .warning)
                    #expect(line.metadata["peer"]?.contains("127.0.0.1") == true)
                    let expected = certificate == nil ? "the client presented no certificate" : "the client certificate is not valid"
                    #expect(line.metadata["reason"]?.hasPrefix(expected) == true, "\(name): \(line)")
                    #expect(collector.edgeStatistics().tlsHandshakeFailures > failuresBefore)
                }
                #expect(collector.edgeStatistics().tlsHandshakeFailures == 3)
                #expect(log.entries(containing: "Refused a TLS connection").count == 3)
                #expect(collector.statistics().streamsAccepted == 0)
            }
            #expect(try storedSequences(directory + "/data", agent: "agent-1", epoch: 1).isEmpty)
        }
    }

    @Test("agent_identity certificate: a stream naming another agent is refused with 403 and a reason, and logged")
    func identityMismatch() async throws {
        try await withTemporaryDirectory { directory in
            let pki = try await TestPKI(directory: directory)
            let log = LogCapture(level: .info)
            let tls = pki.collectorTLS(clientAuthentication: .required, agentIdentity: .certificate)
            try await withEdgeCollector(configuration(directory, tls: tls), log: log) { collector, port in
                try await withTLSClient(try pki.clientTLS(presenting: pki.agent)) { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "agent-2", epoch: "1", scheme: "https")
                    #expect(connection.response.status == .forbidden)
                    let reason = try await connection.readText()
                    #expect(reason.contains("Uplink-Agent 'agent-2' is not a name of the client certificate"), "\(reason)")
                    #expect(reason.contains("agent-1, agent-1.fleet"), "\(reason)")
                }
                let lines = log.entries(containing: "Refused a stream")
                #expect(lines.count == 1)
                #expect(lines.first?.metadata["agent"] == "agent-2")
                #expect(collector.edgeStatistics().identityRefused == 1)
                #expect(collector.statistics().streamsAccepted == 0)
            }
        }
    }

    @Test("client_auth optional: an agent without a certificate streams (header identity), a foreign certificate is refused")
    func optionalClientAuthentication() async throws {
        try await withTemporaryDirectory { directory in
            let pki = try await TestPKI(directory: directory)
            let log = LogCapture(level: .info)
            let tls = pki.collectorTLS(clientAuthentication: .optional)
            try await withEdgeCollector(configuration(directory, tls: tls), log: log) { collector, port in
                try await withTLSClient(try pki.clientTLS()) { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "anonymous", epoch: "1", scheme: "https")
                    #expect(try await connection.nextAck() == .resume(0))
                    connection.send(body(1...3))
                    try await connection.waitForAck(3)
                    #expect(try await connection.close().isEmpty)
                }
                let foreign = try await pki.foreignAgent()
                try await withTLSClient(try pki.clientTLS(presenting: foreign)) { client in
                    await #expect(throws: (any Error).self) {
                        let connection = try await AgentConnection.open(
                            client, port: port, agent: "agent-1", epoch: "1", scheme: "https", timeout: .seconds(2))
                        _ = try await connection.nextAck()
                        _ = try await connection.close()
                    }
                }
                #expect(await eventually { collector.edgeStatistics().tlsHandshakeFailures >= 1 })
            }
            #expect(try storedSequences(directory + "/data", agent: "anonymous", epoch: 1) == [1, 2, 3])
        }
    }

    @Test("A key that does not belong to the certificate, or a missing file, stops the start with a clear error")
    func badFilesFailTheStart() async throws {
        try await withTemporaryDirectory { directory in
            let pki = try await TestPKI(directory: directory)
            var mismatched = pki.collectorTLS()
            mismatched.keyFile = pki.agent.keyFile
            var missing = pki.collectorTLS()
            missing.certificateFile = directory + "/nope.pem"
            for (tls, expected) in [(mismatched, "does not match the certificate"), (missing, "cannot read the certificate")] {
                let collector = Collector(configuration: configuration(directory, tls: tls), logger: testLogger, stdout: RecordingOutput())
                do {
                    try await collector.run()
                    Issue.record("the collector started with \(tls)")
                } catch let error as CollectorError {
                    #expect(error.code == "tls")
                    #expect(error.message.contains(expected), "\(error)")
                }
            }
        }
    }

    @Test("A TCP connection that never starts the TLS handshake is closed after the head deadline")
    func handshakeDeadline() async throws {
        try await withTemporaryDirectory { directory in
            let pki = try await TestPKI(directory: directory)
            var configuration = configuration(directory, tls: pki.collectorTLS())
            configuration.requestHeadTimeout = .milliseconds(300)
            let log = LogCapture(level: .info)
            try await withEdgeCollector(configuration, log: log) { collector, port in
                let silent = try await LoopbackTestClient.connect(port: port)
                let closed = await eventually { silent.termination != nil }
                #expect(closed)
                #expect(silent.receivedCount == 0)
                #expect(collector.edgeStatistics().headTimeouts == 1)
                #expect(!log.entries(containing: "did not finish the TLS handshake").isEmpty)
                await silent.close()
            }
        }
    }
}
