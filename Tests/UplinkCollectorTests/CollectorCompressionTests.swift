import AsyncHTTPClient
import NIOCore
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport
import UplinkWire

/// Compressed stream bodies on a real collector over loopback: decoded incrementally, `accept_encodings` honoured with
/// `415`, corrupt bodies and decompression bombs refused, counted and ended while other streams go on.
@Suite("Collector: compressed streams", .timeLimit(.minutes(2)))
struct CollectorCompressionTests {
    static func open(
        _ client: HTTPClient, port: Int, agent: String, _ encoding: WireCompression
    ) async throws -> AgentConnection {
        try await AgentConnection.open(
            client, port: port, agent: agent, epoch: "1",
            headers: encoding.contentEncoding.map { [("Content-Encoding", $0)] } ?? [])
    }

    @Test("Each write pass, compressed and flushed, is stored and acknowledged before the next is sent", arguments: [WireCompression.zstd, .gzip])
    func incrementalDecoding(_ encoding: WireCompression) async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let connection = try await Self.open(client, port: port, agent: "z", encoding)
                    #expect(connection.response.status == .ok)
                    #expect(try await connection.nextAck() == .resume(0))
                    let compressor = try StreamCompressor(encoding)
                    var last: UInt64 = 0
                    for pass in 0..<10 {
                        let lines = UInt64(pass % 3 + 1)
                        var compressed = ByteBuffer()
                        try compressor.compress(body((last + 1)...(last + lines)), flush: true, into: &compressed)
                        // Split the pass's bytes in two chunks: the collector must not wait for more.
                        let half = compressed.readableBytes / 2
                        connection.send(compressed.getSlice(at: compressed.readerIndex, length: half)!)
                        connection.send(compressed.getSlice(at: compressed.readerIndex + half, length: compressed.readableBytes - half)!)
                        last += lines
                        try await connection.waitForAck(last)
                    }
                    _ = try await connection.close()
                    #expect(try storedSequences(directory, agent: "z", epoch: 1) == Array(1...last))
                    let statistics = collector.statistics()
                    #expect(statistics.corruptBodies == 0 && statistics.decompressionBombs == 0)
                    #expect(statistics.malformedLines == 0)
                }
            }
        }
    }

    @Test("accept_encodings [gzip]: zstd is answered 415 with Accept-Encoding, gzip and identity are streamed")
    func acceptEncodings() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = testConfiguration(directory)
            configuration.acceptEncodings = [.gzip]
            try await withCollector(configuration) { collector, port in
                try await withClient { client in
                    let refused = try await Self.open(client, port: port, agent: "a", .zstd)
                    #expect(refused.response.status == .unsupportedMediaType)
                    #expect(refused.response.headers["Accept-Encoding"].first == "gzip, identity")
                    let text = try await refused.readText()
                    #expect(text.contains("unsupported Content-Encoding zstd"), "\(text)")
                    refused.finishUpload()
                    #expect(collector.statistics().streamsRejected == 1)

                    for (agent, headers) in [("b", [("Content-Encoding", "gzip")]), ("c", [("Content-Encoding", "identity")]), ("d", [])] {
                        let connection = try await AgentConnection.open(client, port: port, agent: agent, epoch: "1", headers: headers)
                        #expect(connection.response.status == .ok, "\(agent)")
                        if headers.first?.1 == "gzip" {
                            let compressor = try StreamCompressor(.gzip)
                            var compressed = ByteBuffer()
                            try compressor.compress(body(1...3), flush: true, into: &compressed)
                            connection.send(compressed)
                        } else {
                            connection.send(body(1...3))
                        }
                        #expect(try await connection.nextAck() == .resume(0))
                        try await connection.waitForAck(3)
                        _ = try await connection.close()
                    }
                }
            }
        }
    }

    @Test("No compressed encoding accepted: even gzip is answered 415, identity still streams")
    func noneAccepted() async throws {
        try await withTemporaryDirectory { directory in
            var configuration = testConfiguration(directory)
            configuration.acceptEncodings = []
            try await withCollector(configuration) { _, port in
                try await withClient { client in
                    let refused = try await Self.open(client, port: port, agent: "a", .gzip)
                    #expect(refused.response.status == .unsupportedMediaType)
                    #expect(refused.response.headers["Accept-Encoding"].first == "identity")
                    refused.finishUpload()
                    let plain = try await Self.open(client, port: port, agent: "b", .none)
                    #expect(plain.response.status == .ok)
                    _ = try await plain.close()
                }
            }
        }
    }

    /// Streams `records` lines with zstd on agent `name` and waits for their acks, while the other stream misbehaves.
    static func healthyStream(_ client: HTTPClient, port: Int, name: String, passes: Int) async throws {
        let connection = try await open(client, port: port, agent: name, .zstd)
        #expect(try await connection.nextAck() == .resume(0))
        let compressor = try StreamCompressor(.zstd)
        for pass in 0..<passes {
            var compressed = ByteBuffer()
            let first = UInt64(pass * 5 + 1)
            try compressor.compress(body(first...(first + 4)), flush: true, into: &compressed)
            connection.send(compressed)
            try await connection.waitForAck(first + 4)
        }
        _ = try await connection.close()
    }

    @Test("A corrupt body: the stream ends with an error line, is counted, and another agent keeps streaming")
    func corruptBody() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    let healthy = try await Self.open(client, port: port, agent: "healthy", .zstd)
                    #expect(try await healthy.nextAck() == .resume(0))
                    let compressor = try StreamCompressor(.zstd)
                    var first = ByteBuffer()
                    try compressor.compress(body(1...5), flush: true, into: &first)
                    healthy.send(first)
                    try await healthy.waitForAck(5)

                    let bad = try await Self.open(client, port: port, agent: "bad", .zstd)
                    #expect(try await bad.nextAck() == .resume(0))
                    var good = ByteBuffer()
                    try StreamCompressor(.zstd).compress(body(1...2), flush: true, into: &good)
                    bad.send(good)
                    try await bad.waitForAck(2)
                    bad.send(ByteBuffer(bytes: [UInt8](repeating: 0xFF, count: 64)))
                    var lines: [String] = []
                    for _ in 0..<10 {
                        guard let line = try? await bad.nextLine() else { break }
                        lines.append(String(buffer: line))
                    }
                    #expect(lines.count == 1, "\(lines)")
                    #expect(lines.first?.hasPrefix(#"{"error":"corrupt_body","message":"zstd: "#) == true, "\(lines)")
                    bad.finishUpload()
                    #expect(collector.statistics().corruptBodies == 1)
                    #expect(collector.statistics().decompressionBombs == 0)

                    // The healthy stream, opened before, goes on; so does a new one.
                    var second = ByteBuffer()
                    try compressor.compress(body(6...10), flush: true, into: &second)
                    healthy.send(second)
                    try await healthy.waitForAck(10)
                    _ = try await healthy.close()
                    try await Self.healthyStream(client, port: port, name: "another", passes: 3)
                    #expect(try storedSequences(directory, agent: "bad", epoch: 1) == [1, 2])
                    #expect(try storedSequences(directory, agent: "healthy", epoch: 1) == Array(1...10))
                }
            }
        }
    }

    @Test("A decompression bomb: refused at the limit, counted, the stream ended; another agent keeps streaming")
    func bomb() async throws {
        try await withTemporaryDirectory { directory in
            try await withCollector(testConfiguration(directory)) { collector, port in
                try await withClient { client in
                    // 256 MiB of one byte: one endless line, which the collector skips as too long while it decodes.
                    // Compressed before the stream opens (seconds on a loaded machine), so the stream carries only it.
                    var bomb = ByteBuffer()
                    let compressor = try StreamCompressor(.zstd)
                    let block = ByteBuffer(repeating: UInt8(ascii: "x"), count: 16 << 20)
                    for _ in 0..<16 { try compressor.compress(block, flush: false, into: &bomb) }
                    try compressor.compress(ByteBuffer(), flush: true, into: &bomb)
                    #expect(bomb.readableBytes < 64 << 10, "\(bomb.readableBytes)")
                    let bad = try await Self.open(client, port: port, agent: "bomber", .zstd)
                    #expect(try await bad.nextAck() == .resume(0))
                    bad.send(bomb)
                    var lines: [String] = []
                    for _ in 0..<10 {
                        guard let line = try? await bad.nextLine() else { break }
                        lines.append(String(buffer: line))
                    }
                    #expect(lines.contains { $0.hasPrefix(#"{"error":"decompression_bomb""#) }, "\(lines)")
                    bad.finishUpload()
                    #expect(collector.statistics().decompressionBombs == 1)
                    #expect(collector.statistics().corruptBodies == 0)
                    // A client of its own: the pool could still count the connection the collector closed after the
                    // bomb as idle and send the neighbour's stream on it (remoteConnectionClosed on a loaded machine).
                    try await withClient { fresh in
                        try await Self.healthyStream(fresh, port: port, name: "neighbour", passes: 3)
                    }
                    #expect(try storedSequences(directory, agent: "neighbour", epoch: 1) == Array(1...15))
                }
            }
        }
    }
}
