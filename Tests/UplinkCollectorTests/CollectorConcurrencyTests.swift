import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport
import UplinkWire

@Suite(.timeLimit(.minutes(5)))
struct CollectorConcurrencyTests {
    @Test func twoHundredConcurrentStreamsAreAllStoredAndAcknowledged() async throws {
        let streams = 200
        let recordsPerStream: UInt64 = 5
        try await withTemporaryDirectory { directory in
            let output = RecordingOutput()
            try await withCollector(testConfiguration(directory), output: output) { collector, port in
                try await withClient { client in
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for index in 0..<streams {
                            group.addTask {
                                let connection = try await AgentConnection.open(
                                    client, port: port, agent: "agent-\(index)", epoch: UInt64(index) + 1)
                                #expect(try await connection.nextAck() == .resume(0))
                                connection.send(body(1...3))
                                connection.send(body(4...recordsPerStream))
                                try await connection.waitForAck(recordsPerStream)
                                _ = try await connection.close()
                            }
                        }
                        try await group.waitForAll()
                    }
                }
                #expect(await eventually { output.lines.count == streams * Int(recordsPerStream) })
                let statistics = collector.statistics()
                #expect(statistics.recordsStored == UInt64(streams) * recordsPerStream)
                #expect(statistics.streamsAccepted == UInt64(streams))
                #expect(statistics.marks.count == streams)
                #expect(statistics.marks.values.allSatisfy { $0 == recordsPerStream })
                #expect(statistics.activeStreams == 0)
            }
            let stored = try storedRecords(directory)
            #expect(stored.count == streams * Int(recordsPerStream))
            for index in 0..<streams {
                let sequences = stored.filter { $0.agent == "agent-\(index)" }.map(\.sequence)
                #expect(sequences == Array(1...recordsPerStream), "agent-\(index)")
            }
            #expect(output.lines.count == streams * Int(recordsPerStream))
        }
    }

    @Test func aNewConnectionOfTheSameAgentReplacesTheOldOne() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let old = try await AgentConnection.open(client, port: port, agent: "flappy", epoch: 5)
                    #expect(try await old.nextAck() == .resume(0))
                    old.send(body(1...3))
                    #expect(try await old.nextAck() == .ack(3))

                    let new = try await AgentConnection.open(client, port: port, agent: "flappy", epoch: 5)
                    #expect(try await new.nextAck() == .resume(3))
                    // The old response ends (the collector closed that connection).
                    #expect(await old.readUntilEnd().isEmpty)
                    old.finishUpload()
                    new.send(body(2...6))
                    #expect(try await new.nextAck() == .ack(6))

                    // Another agent is not affected.
                    let other = try await AgentConnection.open(client, port: port, agent: "steady", epoch: 5)
                    #expect(try await other.nextAck() == .resume(0))
                    other.send(body(1...1))
                    #expect(try await other.nextAck() == .ack(1))
                    _ = try await other.close()
                    _ = try await new.close()
                }
                let statistics = collector.statistics()
                #expect(statistics.streamsReplaced == 1)
                #expect(statistics.duplicatesDiscarded == 2)
                #expect(statistics.activeStreams == 0)
            }
            #expect(try storedSequences(directory, agent: "flappy", epoch: 5) == Array(1...6))
        }
    }

    /// Once in CI: nginx answered 408 to an agent that waited too long for `resume`, the agent's next stream was
    /// served, and only then did the busy collector read the first request, whose connection nginx had closed long
    /// before; claiming the agent for it cut the live stream off.
    @Test("a request whose connection closed before the collector read it does not take the agent from its live stream")
    func aRequestOnAClosedConnectionDoesNotReplaceTheLiveStream() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let live = try await AgentConnection.open(client, port: port, agent: "edge", epoch: 1)
                    #expect(try await live.nextAck() == .resume(0))
                    live.send(body(1...2))
                    #expect(try await live.nextAck() == .ack(2))

                    let staleGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
                    _ = try await Self.sendWhileTheCollectorIsHeld(
                        port: port, rawStreamHead(agent: "edge"), group: staleGroup, then: .close)
                    #expect(await eventually(timeout: .seconds(30)) { collector.statistics().streamsRejected == 1 })

                    live.send(body(3...3))
                    #expect(try await live.nextAck() == .ack(3))
                    _ = try await live.close()
                    try await staleGroup.shutdownGracefully()
                }
                let statistics = collector.statistics()
                #expect(statistics.streamsReplaced == 0)
                #expect(statistics.streamsAccepted == 1)
            }
            #expect(try storedSequences(directory, agent: "edge", epoch: 1) == Array(1...3))
        }
    }

    /// What is not abandoned: a request whose body is complete before its sender half-closes (read together with
    /// the close, as above) is served, stored and acknowledged.
    @Test("a request complete before its sender's half-close is served: stored and acknowledged")
    func aCompleteRequestBeforeAHalfCloseIsServed() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                let senderGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
                let records = Array(body(1...3).readableBytesView)
                let chunk = Array(String(records.count, radix: 16).utf8) + Array("\r\n".utf8) + records + Array("\r\n0\r\n\r\n".utf8)
                let sender = try await Self.sendWhileTheCollectorIsHeld(
                    port: port, rawStreamHead(agent: "one-shot") + chunk, group: senderGroup, then: .halfClose)
                #expect(await eventually(timeout: .seconds(30)) { collector.statistics().recordsStored == 3 })
                #expect(await eventually(timeout: .seconds(30)) { String(decoding: sender.received, as: UTF8.self).contains(#"{"ack":3}"#) })
                #expect(collector.statistics().streamsRejected == 0)
                await sender.close()
                try await senderGroup.shutdownGracefully()
            }
            #expect(try storedSequences(directory, agent: "one-shot", epoch: 1) == [1, 2, 3])
        }
    }

    /// How `sendWhileTheCollectorIsHeld` ends its connection.
    private enum Ending { case close, halfClose }

    /// Connects to the collector on `port` from `group`, sends `bytes` and ends the connection, all while every loop
    /// of NIO's singleton group (the collector's) is held: the collector then reads the request and the end together,
    /// as a collector too busy to read does.
    private static func sendWhileTheCollectorIsHeld(
        port: Int, _ bytes: [UInt8], group: any EventLoopGroup, then ending: Ending
    ) async throws -> LoopbackTestClient {
        let held = await HeldEventLoops(MultiThreadedEventLoopGroup.singleton)
        defer { held.release() }
        let client = try await LoopbackTestClient.connect(port: port, group: group)
        try await client.sendAndWait(bytes)
        switch ending {
        case .close: await client.close()
        case .halfClose: try await client.shutdownOutput()
        }
        return client
    }

    @Test func manyReconnectsOfOneAgentNeverStoreTwice() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    // Connections race each other; every one sends the whole range again.
                    try await withThrowingTaskGroup(of: Void.self) { group in
                        for _ in 0..<20 {
                            group.addTask {
                                // A connection replaced by a newer one may break anywhere, even before its
                                // response head arrives; that is the agent's cue to reconnect.
                                do {
                                    let connection = try await AgentConnection.open(client, port: port, agent: "racer", epoch: 1)
                                    guard case .resume(let resume)? = try await connection.nextAck() else { return }
                                    #expect(resume <= 50)
                                    connection.send(body(1...25))
                                    connection.send(body(26...50))
                                    connection.finishUpload()
                                    // Ends when the collector has read the whole request, or when a newer
                                    // connection replaced this one.
                                    let acks = await connection.readUntilEnd()
                                    #expect(acks.allSatisfy { if case .ack(let value) = $0 { value <= 50 } else { false } })
                                } catch {}
                            }
                        }
                        try await group.waitForAll()
                    }
                    let last = try await AgentConnection.open(client, port: port, agent: "racer", epoch: 1)
                    #expect(try await last.nextAck() == .resume(collector.statistics().marks[StreamKey(agent: "racer", epoch: 1)] ?? 0))
                    last.send(body(1...51))
                    try await last.waitForAck(51)
                    _ = try await last.close()
                }
            }
            #expect(try storedSequences(directory, agent: "racer", epoch: 1) == Array(1...51))
        }
    }
}
