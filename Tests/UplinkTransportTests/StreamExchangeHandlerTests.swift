import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing
import UplinkCore
import UplinkWire

@testable import UplinkTransport

/// The stream's exchange as the last handler of a channel (`EmbeddedChannel`, so every write and read is the test's):
/// the head first, the pair's chunks as body parts paced by the channel's writability, and what the response says
/// reported as the driver's events.
@Suite("StreamExchangeHandler")
struct StreamExchangeHandlerTests {
    /// What the handler reported, in order, as short strings.
    final class Reports {
        var events: [String] = []
        var hints: [ConfigHint] = []
    }

    final class Fixture {
        let channel = EmbeddedChannel()
        let reports = Reports()
        let pair: BoundStreamPair
        let handler: StreamExchangeHandler

        init(capacity: Int = 1024, writable: Bool = true) throws {
            let reports = self.reports
            let pairEvents = Box<[String]>([])
            pair = BoundStreamPair(capacity: capacity, loop: channel.embeddedEventLoop) { event in
                switch event {
                case .hasSpaceAvailable: pairEvents.value.append("space")
                case .errorOccurred: pairEvents.value.append("error")
                case .endEncountered: pairEvents.value.append("end")
                }
            }
            self.pairEventsBox = pairEvents
            handler = StreamExchangeHandler(
                connection: UplinkStateMachine.ConnectionID(rawValue: 7),
                head: HTTPRequestHead(version: .http1_1, method: .POST, uri: "/v1/stream"),
                pair: pair,
                report: { reports.events.append(Self.describe($0)) },
                relay: { reports.hints.append($0) })
            channel.isWritable = writable
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
            try channel.pipeline.syncOperations.addHandler(handler)
        }

        private let pairEventsBox: Box<[String]>
        var pairEventsSeen: [String] { pairEventsBox.value }

        /// Writes `text` into the pair as the uplink does; returns the bytes it took.
        @discardableResult
        func write(_ text: String) -> Int {
            var buffer = ByteBuffer(string: text)
            return pair.write(&buffer)
        }

        /// The request parts written to the channel since the last call, as short strings.
        func written() throws -> [String] {
            var parts: [String] = []
            while let part = try channel.readOutbound(as: HTTPClientRequestPart.self) {
                switch part {
                case .head(let head): parts.append("head \(head.method) \(head.uri)")
                case .body(.byteBuffer(let buffer)): parts.append("body \(String(buffer: buffer))")
                case .body(let other): parts.append("body \(other)")
                case .end: parts.append("end")
                }
            }
            return parts
        }

        func respond(_ parts: HTTPClientResponsePart...) throws {
            for part in parts { try channel.writeInbound(part) }
            channel.embeddedEventLoop.run()
        }

        static func describe(_ event: UplinkEvent) -> String {
            switch event {
            case .responseHead(_, let status, let detail): "head \(status)" + (detail.map { " \($0)" } ?? "")
            case .configAdvertised: "config advertised"
            case .ackLine(_, .resume(let value)): "resume \(value)"
            case .ackLine(_, .ack(let value)): "ack \(value)"
            case .streamFailed(_, let failure): "failed \(failure)"
            default: "\(event)"
            }
        }
    }

    final class Box<Value> {
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    static let configHeader = "rev=sha256:" + String(repeating: "0123456789abcdef", count: 4) + ", generation=3"

    static func head(_ status: HTTPResponseStatus, _ headers: [(String, String)] = []) -> HTTPClientResponsePart {
        .head(HTTPResponseHead(version: .http1_1, status: status, headers: HTTPHeaders(headers)))
    }

    @Test("The head goes first, then each chunk the pair takes as one body part; a writable channel frees its room")
    func headThenChunks() throws {
        let fixture = try Fixture()
        #expect(try fixture.written() == ["head POST /v1/stream"])
        #expect(fixture.write("{\"seq\":1}\n") == 10)
        #expect(fixture.write("{\"seq\":2}\n") == 10)
        #expect(try fixture.written() == ["body {\"seq\":1}\n", "body {\"seq\":2}\n"])
        // The channel stayed writable: both chunks were sent as far as the pair is concerned.
        fixture.channel.embeddedEventLoop.run()
        #expect(fixture.pair.availableSpace == 1024)
        #expect(fixture.reports.events.isEmpty)
    }

    @Test("An unwritable channel holds the pair's chunks until it is writable again; nothing is lost or reordered")
    func writabilityPacesThePair() throws {
        let fixture = try Fixture()
        _ = try fixture.written()
        fixture.channel.isWritable = false
        fixture.write("a\n")
        // The chunk in hand went out; the channel said it is full, so the next one waits in the pair.
        fixture.write("b\n")
        fixture.channel.embeddedEventLoop.run()
        #expect(try fixture.written() == ["body a\n"])
        // Both count against the pair: the one handed over while the channel was full, and the one waiting.
        #expect(fixture.pair.availableSpace == 1024 - 4)
        fixture.channel.isWritable = true
        fixture.channel.pipeline.fireChannelWritabilityChanged()
        fixture.channel.embeddedEventLoop.run()
        #expect(try fixture.written() == ["body b\n"])
        #expect(fixture.pair.availableSpace == 1024)
    }

    @Test("1xx answers are passed over; 200 with Uplink-Config, resume and ack lines, then the response's end")
    func responseLinesAndEnd() throws {
        let fixture = try Fixture()
        try fixture.respond(
            Self.head(.continue),
            Self.head(.ok, [("Uplink-Config", Self.configHeader)]),
            .body(ByteBuffer(string: "{\"resume\":0}\n{\"ack\":")),
            .body(ByteBuffer(string: "5}\n{\"heartbeat\":1}\n{\"ack\":9}\n")),
            .end(nil))
        #expect(fixture.reports.events == [
            "head 200", "config advertised", "resume 0", "ack 5", "ack 9", "failed collector ended the stream",
        ])
        #expect(fixture.reports.hints == [ConfigHint(headerValue: Self.configHeader)].compactMap { $0 })
        #expect(fixture.reports.hints.count == 1)
        #expect(try fixture.handler.ended.futureResult.map { true }.wait())
    }

    @Test("A refusal is reported with the text of its body, before the end of the response")
    func refusalWithBody() throws {
        let fixture = try Fixture()
        try fixture.respond(
            Self.head(.badRequest),
            .body(ByteBuffer(string: """
                <html><head><title>400 No required SSL certificate was sent</title></head><body>
                <center><h1>400 Bad Request</h1></center><center>No required SSL certificate was sent</center><hr>
                <center>nginx</center></body></html>
                """)),
            .end(nil))
        #expect(fixture.reports.events.count == 2)
        #expect(fixture.reports.events.first?.hasPrefix("head 400 ") == true)
        #expect(fixture.reports.events.first?.contains("No required SSL certificate was sent") == true)
        #expect(fixture.reports.events.last == "failed collector ended the stream")
    }

    @Test("The connection closing before the response ended: one transport failure, the pair's input ends, `ended` fails")
    func closedConnection() throws {
        let fixture = try Fixture()
        try fixture.respond(Self.head(.ok))
        try fixture.channel.close().wait()
        fixture.channel.embeddedEventLoop.run()
        #expect(fixture.reports.events.count == 2)
        #expect(fixture.reports.events.last?.hasPrefix("failed ") == true)
        #expect(fixture.reports.events.last?.contains("the connection closed before the collector ended its response") == true)
        #expect(fixture.pairEventsSeen.contains("error"))
        #expect(throws: (any Error).self) { try fixture.handler.ended.futureResult.wait() }
        // Further writes are refused.
        #expect(fixture.write("late\n") == 0)
    }

    @Test("A clean end of the pair ends the request body; an abandoned exchange reports nothing more")
    func cleanEndAndAbandon() throws {
        let fixture = try Fixture()
        _ = try fixture.written()
        fixture.write("last\n")
        fixture.pair.close()
        fixture.channel.embeddedEventLoop.run()
        #expect(try fixture.written() == ["body last\n", "end"])
        fixture.handler.abandon(CancellationError())
        try fixture.channel.close().wait()
        fixture.channel.embeddedEventLoop.run()
        #expect(fixture.reports.events.isEmpty)
    }
}
