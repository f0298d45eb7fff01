import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport
import UplinkWire

/// The collector's connection hygiene over real loopback sockets: deadlines, the stream limit, heartbeat answers.
@Suite("Collector limits", .serialized, .timeLimit(.minutes(6)))
struct CollectorLimitsTests {
    static let streamHead = rawStreamHead(agent: "slow")

    @Test("Slowloris: no bytes, half a head, a head without a body are all closed by the deadlines; /healthz answers")
    func slowConnectionsAreClosed() async throws {
        try await CPUGate.exclusive {
            try await withTemporaryDirectory { directory in
                var configuration = testConfiguration(directory)
                // Long enough that a busy machine still sends the complete head in time (2 s was not, once: a full
                // run beside 20 SIGKILLed agents), short enough to keep the test quick.
                configuration.requestHeadTimeout = .seconds(5)
                // The idle timer starts when the complete head arrives, before the request's handler has answered
                // it; 3 s let a full run on a loaded machine (the test took 29 s) cut the stream before its answer
                // was written.
                configuration.streamIdleTimeout = .seconds(10)
                let log = LogCapture(level: .info)
                try await withEdgeCollector(configuration, log: log) { collector, port in
                    // The heads are written as each connection comes up, on its loop: a test task that a loaded
                    // machine runs late would otherwise send them after the head deadline closed the connection.
                    let silent = try await LoopbackTestClient.connect(port: port)
                    let halfHead = try await LoopbackTestClient.connect(
                        port: port, sendingFirst: Array("POST /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nUplink-Ag".utf8))
                    let noBody = try await LoopbackTestClient.connect(port: port, sendingFirst: Self.streamHead)
                    try await withClient { client in
                        #expect(await healthzAnswers(client, port: port))
                    }
                    for (name, connection) in [("silent", silent), ("half head", halfHead), ("head without body", noBody)] {
                        let closed = await eventually { connection.termination != nil }
                        #expect(closed, "\(name) stays open")
                    }
                    // The one with a complete head got its answer and resume line before it was cut.
                    #expect(String(decoding: noBody.received, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
                    #expect(String(decoding: noBody.received, as: UTF8.self).contains(#"{"resume":0}"#))
                    #expect(silent.receivedCount == 0)
                    let edge = collector.edgeStatistics()
                    // The silent and the half head; on a loaded machine also the /healthz client's kept-alive
                    // connection, when its shutdown takes longer than the head deadline.
                    #expect(edge.headTimeouts >= 2)
                    #expect(edge.idleTimeouts == 1)
                    #expect(!log.entries(containing: "sent no complete request head in time").isEmpty)
                    #expect(!log.entries(containing: "brought nothing for the idle timeout").isEmpty)
                    #expect(await eventually { collector.statistics().activeStreams == 0 })
                    try await withClient { client in
                        #expect(await healthzAnswers(client, port: port))
                    }
                    for connection in [silent, halfHead, noBody] { await connection.close() }
                }
            }
        }
    }

    @Test("A stream kept busy only by heartbeats outlives several idle timeouts; silence then ends it")
    func heartbeatsKeepAStreamAlive() async throws {
        try await CPUGate.exclusive {
            try await withTemporaryDirectory { directory in
                var configuration = testConfiguration(directory)
                configuration.streamIdleTimeout = .seconds(2)
                try await withEdgeCollector(configuration, log: LogCapture(level: .info)) { collector, port in
                    let agent = try await LoopbackTestClient.connect(port: port)
                    try await agent.sendAndWait(Self.streamHead)
                    // 40 heartbeats 100 ms apart: about 4 s, twice the idle timeout, with a 20-fold margin per gap.
                    for _ in 0..<40 {
                        try await agent.sendAndWait(Self.chunk(#"{"heartbeat":1763704833000000000}"# + "\n"))
                        try await Task.sleep(for: .milliseconds(100))
                    }
                    #expect(agent.termination == nil)
                    #expect(collector.edgeStatistics().idleTimeouts == 0)
                    #expect(collector.statistics().heartbeats == 40)
                    let answers = String(decoding: agent.received, as: UTF8.self).components(separatedBy: #"{"heartbeat":"#).count - 1
                    #expect(answers >= 1 && answers <= 40)
                    #expect(await eventually { agent.termination != nil })
                    #expect(collector.edgeStatistics().idleTimeouts == 1)
                    await agent.close()
                }
            }
        }
    }

    @Test("Each heartbeat is answered on the response with the collector's wall clock")
    func heartbeatsAreAnswered() async throws {
        try await withTemporaryDirectory { directory in
            try await withEdgeCollector(testConfiguration(directory), log: LogCapture(level: .info)) { collector, port in
                try await withClient { client in
                    let connection = try await AgentConnection.open(client, port: port, agent: "beating", epoch: 1)
                    #expect(try await connection.nextAck() == .resume(0))
                    for _ in 0..<3 {
                        let before = WallClock.nowNanoseconds()
                        connection.send(#"{"heartbeat":1763704833000000000}"# + "\n")
                        let line = try #require(try await connection.nextLine())
                        let after = WallClock.nowNanoseconds()
                        let text = String(buffer: line)
                        #expect(text.hasPrefix(#"{"heartbeat":"#) && text.hasSuffix("}"), "\(text)")
                        let stamp = try #require(Int64(text.dropFirst(13).dropLast()))
                        #expect(stamp >= before && stamp <= after)
                        // The agent's ack parser ignores the line.
                        #expect(AckLine.parse(line) == nil)
                    }
                    connection.send(body(1...2))
                    try await connection.waitForAck(2)
                    _ = try await connection.close()
                }
                #expect(collector.statistics().heartbeats == 3)
            }
        }
    }

    @Test("Past max_streams: 503 with a reason and Retry-After, counted; the streaming agent goes on; /healthz answers")
    func streamLimit() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = testConfiguration(directory)
            configuration.maxStreams = 3
            let log = LogCapture(level: .info)
            try await withEdgeCollector(configuration, log: log) { collector, port in
                try await withClient { client in
                    let good = try await AgentConnection.open(client, port: port, agent: "good", epoch: 1)
                    #expect(try await good.nextAck() == .resume(0))
                    good.send(body(1...50))
                    try await good.waitForAck(50)
                    var others: [AgentConnection] = []
                    for number in 1...2 {
                        let other = try await AgentConnection.open(client, port: port, agent: "other-\(number)", epoch: 1)
                        #expect(try await other.nextAck() == .resume(0))
                        others.append(other)
                    }
                    for attempt in 1...3 {
                        let refused = try await AgentConnection.open(client, port: port, agent: "late-\(attempt)", epoch: 1)
                        #expect(refused.response.status == .serviceUnavailable)
                        #expect(refused.response.headers.first(name: "Retry-After") == "5")
                        let reason = try await refused.readText()
                        #expect(reason.contains("too many streams: this collector serves at most 3 at once"), "\(reason)")
                    }
                    #expect(collector.edgeStatistics().streamsOverLimit == 3)
                    #expect(log.entries(containing: "the stream limit is reached").count == 3)
                    #expect(await healthzAnswers(client, port: port))

                    // The agent that streams keeps streaming, and may even replace its own stream at the limit.
                    good.send(body(51...100))
                    try await good.waitForAck(100)
                    let again = try await AgentConnection.open(client, port: port, agent: "good", epoch: 1)
                    #expect(try await again.nextAck() == .resume(100))
                    again.send(body(101...120))
                    try await again.waitForAck(120)

                    // A slot that is given back lets the next agent in.
                    _ = try await others.removeFirst().close()
                    #expect(await eventually { collector.statistics().activeStreams == 2 })
                    let late = try await AgentConnection.open(client, port: port, agent: "late-4", epoch: 1)
                    #expect(late.response.status == .ok)
                    #expect(try await late.nextAck() == .resume(0))
                    _ = try await late.close()
                    _ = try await again.close()
                    for other in others { _ = try await other.close() }
                    _ = await good.readUntilEnd()
                }
            }
            #expect(try storedSequences(directory, agent: "good", epoch: 1) == Array(1...120))
        }
    }

    /// One HTTP/1.1 chunk holding `text`.
    static func chunk(_ text: String) -> [UInt8] {
        Array((String(text.utf8.count, radix: 16) + "\r\n" + text + "\r\n").utf8)
    }
}
