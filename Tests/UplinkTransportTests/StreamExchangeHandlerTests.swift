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

    // MARK: HTTP/1.1 chunk framing

    /// The request's bytes on the wire, from an HTTP/1.1 pipeline as the connector builds it: NIO's encoder, the
    /// response decoder, the exchange. `ownFraming`: the exchange frames the chunks below the encoder, as shipped.
    /// `writes`: how many buffers were written.
    static func wire(
        chunkSizes: [Int], ownFraming: Bool, headers: HTTPHeaders = [:]
    ) throws -> (bytes: [UInt8], writes: Int) {
        let channel = EmbeddedChannel()
        let pair = BoundStreamPair(capacity: 4 << 20, loop: channel.embeddedEventLoop) { _ in }
        let handler = StreamExchangeHandler(
            connection: UplinkStateMachine.ConnectionID(rawValue: 1),
            head: HTTPRequestHead(version: .http1_1, method: .POST, uri: "/v1/stream", headers: headers),
            pair: pair, report: { _ in }, relay: { _ in })
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        let encoder = HTTPRequestEncoder()
        try channel.pipeline.syncOperations.addHandler(encoder)
        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(HTTPResponseDecoder()))
        if ownFraming { handler.frameChunks(below: try channel.pipeline.syncOperations.context(handler: encoder)) }
        try channel.pipeline.syncOperations.addHandler(handler)
        for (index, size) in chunkSizes.enumerated() {
            var chunk = ByteBuffer(repeating: UInt8(ascii: "a") + UInt8(index % 26), count: size)
            #expect(pair.write(&chunk) == size)
            channel.embeddedEventLoop.run()
        }
        pair.close()
        channel.embeddedEventLoop.run()
        var bytes: [UInt8] = []
        var writes = 0
        while let part = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = part else { Issue.record("a file region was written"); continue }
            bytes += buffer.readableBytesView
            writes += 1
        }
        _ = try? channel.finish()
        return (bytes, writes)
    }

    /// The request `bytes` decoded by NIO's server-side parser: the head's URI, the body, and whether it ended.
    static func decodeRequest(_ bytes: [UInt8]) throws -> (uri: String?, body: [UInt8], ended: Bool) {
        let server = EmbeddedChannel(handler: ByteToMessageHandler(HTTPRequestDecoder()))
        try server.writeInbound(ByteBuffer(bytes: bytes))
        var uri: String?
        var body: [UInt8] = []
        var ended = false
        while let part = try server.readInbound(as: HTTPServerRequestPart.self) {
            switch part {
            case .head(let head): uri = head.uri
            case .body(let buffer): body += buffer.readableBytesView
            case .end: ended = true
            }
        }
        _ = try? server.finish()
        return (uri, body, ended)
    }

    @Test(
        "HTTP/1.1: the chunks the exchange frames itself are the bytes NIO's encoder would write, and parse as the body",
        arguments: [[1], [15, 16, 17], [255, 256, 4_095, 4_096], [65_535, 65_536, 65_537], [1 << 20, 3], [10, 1 << 21, 10]])
    func ownChunkFramingIsTheEncodersBytes(chunkSizes: [Int]) throws {
        let own = try Self.wire(chunkSizes: chunkSizes, ownFraming: true)
        let encoders = try Self.wire(chunkSizes: chunkSizes, ownFraming: false)
        #expect(own.bytes == encoders.bytes)
        // The head, each chunk (one buffer up to the copy limit, three above it), the last chunk; through the encoder
        // every chunk is three.
        let chunkWrites = chunkSizes.map { $0 <= ChunkFraming.copyLimit ? 1 : 3 }.reduce(0, +)
        #expect(own.writes == 1 + chunkWrites + 1)
        #expect(encoders.writes == 1 + 3 * chunkSizes.count + 1)
        let request = try Self.decodeRequest(own.bytes)
        #expect(request.uri == "/v1/stream")
        #expect(request.ended)
        var expected: [UInt8] = []
        for (index, size) in chunkSizes.enumerated() { expected += repeatElement(UInt8(ascii: "a") + UInt8(index % 26), count: size) }
        #expect(request.body == expected)
    }

    @Test("A chunk's size line is its length in lower-case hexadecimal and CRLF")
    func sizeLines() {
        let cases: [(Int, String)] = [
            (1, "1"), (9, "9"), (10, "a"), (15, "f"), (16, "10"), (255, "ff"), (256, "100"), (0xABCDEF, "abcdef"),
            (65_536, "10000"), (Int.max, "7fffffffffffffff"),
        ]
        for (count, hex) in cases {
            var buffer = ByteBuffer()
            ChunkFraming.writeSizeLine(count, to: &buffer)
            #expect(String(buffer: buffer) == hex + "\r\n", "\(count)")
        }
    }

    @Test("A head the encoder does not frame as chunked (with Content-Length) keeps the encoder's framing")
    func contentLengthKeepsTheEncoder() throws {
        let headers = HTTPHeaders([("Content-Length", "5")])
        let own = try Self.wire(chunkSizes: [5], ownFraming: true, headers: headers)
        #expect(own.bytes == (try Self.wire(chunkSizes: [5], ownFraming: false, headers: headers)).bytes)
        #expect(String(decoding: own.bytes, as: UTF8.self).hasSuffix("\r\n\r\naaaaa"))
    }
}
