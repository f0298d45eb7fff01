import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Synchronization
import Testing
import UplinkCollector
import UplinkCore
import UplinkTestSupport
import UplinkWire

/// Runs `body` with a fresh temporary directory (`TestDirectories`: removed when the test process exits).
func withTemporaryDirectory<T>(_ body: (String) async throws -> T) async throws -> T {
    try await body(TestDirectories.make("uplink-collector"))
}

/// Accepted records of `agent` (epoch 1) for the storage: `count` log lines from sequence `first`, each with a
/// `padding`-byte message.
func logBatch(_ agent: String, from first: UInt64, count: Int, padding: Int = 40) -> CollectorBatch {
    let filler = String(repeating: "p", count: padding)
    let lines = (0..<count).map { index in
        ByteBufferAllocator().buffer(string: #"{"seq":\#(first + UInt64(index)),"ts":1,"src":"s","log":"\#(filler)"}"#)
    }
    return CollectorBatch(
        stream: StreamKey(agent: agent, epoch: 1), lines: RecordLines(lines), highestSequence: first + UInt64(count) - 1)
}

/// The head of a stream request from `agent` (epoch 1) with a chunked body to follow, as raw bytes for tests that
/// write to the socket themselves.
func rawStreamHead(agent: String) -> [UInt8] {
    Array(
        ("POST /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-ndjson\r\n"
            + "Uplink-Protocol: 1\r\nUplink-Agent: \(agent)\r\nUplink-Epoch: 1\r\nTransfer-Encoding: chunked\r\n\r\n").utf8)
}

func testConfiguration(_ directory: String, token: String? = nil, maxLineBytes: Int = 1 << 20, jsonl: Bool = true)
    -> CollectorConfiguration
{
    CollectorConfiguration(
        host: "127.0.0.1", port: 0, dataDirectory: directory, stdoutSink: true, jsonlSink: jsonl, token: token,
        maxLineBytes: maxLineBytes)
}

/// Runs `body` with an HTTP client (by default plain HTTP, up to 400 connections to the collector), then shuts it down.
func withClient<T>(
    _ configuration: HTTPClient.Configuration = {
        var configuration = HTTPClient.Configuration()
        // The client gives up an idle connection before the collector does (`request_head_timeout`, 10 s between
        // requests): otherwise a request sent as the collector closes the connection fails with
        // `remoteConnectionClosed`, which a test whose requests are 10 s apart on a loaded machine has met.
        configuration.connectionPool = .init(idleTimeout: .seconds(5), concurrentHTTP1ConnectionsPerHostSoftLimit: 400)
        return configuration
    }(),
    _ body: (HTTPClient) async throws -> T
) async throws -> T {
    let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    do {
        let result = try await body(client)
        try await client.shutdown()
        return result
    } catch {
        try? await client.shutdown()
        throw error
    }
}

/// A record line (without its `\n`) as an agent sends it.
func recordLine(_ sequence: UInt64, _ record: Record? = nil) -> [UInt8] {
    let record =
        record
        ?? .metric(
            "cpu.user", value: Double(sequence) / 2, unit: "percent", tags: [Tag("cpu", "total")], source: "cpu",
            timestamp: 1_763_704_818_000_000_000 + Int64(sequence))
    var frame: [UInt8] = []
    NDJSONFrameEncoder().encodeFrame(record, into: &frame)
    var buffer = ByteBufferAllocator().buffer(capacity: frame.count + 24)
    _ = frame.withUnsafeBytes { WireLineWriter.appendRecordLine(sequence: sequence, frame: $0, to: &buffer) }
    var bytes = Array(buffer.readableBytesView)
    bytes.removeLast()
    return bytes
}

/// Lines joined with `\n` terminators.
func body(_ lines: [[UInt8]]) -> ByteBuffer {
    ByteBufferAllocator().buffer(bytes: lines.flatMap { $0 + [UInt8(ascii: "\n")] })
}

func body(_ sequences: ClosedRange<UInt64>) -> ByteBuffer { body(sequences.map { recordLine($0) }) }

/// One agent's stream as a test drives it: the upload is fed chunk by chunk, the response read line by line.
final class AgentConnection {
    let response: HTTPClientResponse
    private let upload: AsyncStream<ByteBuffer>.Continuation
    private var iterator: HTTPClientResponse.Body.AsyncIterator
    private var splitter = LineSplitter()

    private init(response: HTTPClientResponse, upload: AsyncStream<ByteBuffer>.Continuation) {
        self.response = response
        self.upload = upload
        self.iterator = response.body.makeAsyncIterator()
    }

    static func open(
        _ client: HTTPClient, port: Int, agent: String?, epoch: String?, token: String? = nil,
        headers extra: [(String, String)] = [], scheme: String = "http", timeout: TimeAmount = .minutes(5)
    ) async throws -> AgentConnection {
        let (stream, upload) = AsyncStream.makeStream(of: ByteBuffer.self)
        var request = HTTPClientRequest(url: "\(scheme)://127.0.0.1:\(port)/v1/stream")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-ndjson")
        request.headers.add(name: "Uplink-Protocol", value: "1")
        if let agent { request.headers.add(name: "Uplink-Agent", value: agent) }
        if let epoch { request.headers.add(name: "Uplink-Epoch", value: epoch) }
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        for (name, value) in extra { request.headers.replaceOrAdd(name: name, value: value) }
        request.body = .stream(stream, length: .unknown)
        let response = try await client.execute(request, timeout: timeout)
        return AgentConnection(response: response, upload: upload)
    }

    static func open(_ client: HTTPClient, port: Int, agent: String, epoch: UInt64, token: String? = nil) async throws
        -> AgentConnection
    {
        try await open(client, port: port, agent: agent, epoch: String(epoch), token: token)
    }

    func send(_ chunk: ByteBuffer) {
        upload.yield(chunk)
    }

    func send(_ text: String) {
        upload.yield(ByteBufferAllocator().buffer(string: text))
    }

    func finishUpload() {
        upload.finish()
    }

    /// The rest of the response body as text.
    func readText() async throws -> String {
        var text = ""
        while let chunk = try await iterator.next() { text += String(buffer: chunk) }
        return text
    }

    /// The next response line, nil at the end of the response.
    func nextLine() async throws -> ByteBuffer? {
        while true {
            if case .line(let line)? = splitter.nextLine() { return line }
            guard let chunk = try await iterator.next() else { return nil }
            splitter.append(chunk)
        }
    }

    /// The next response line as an ack line (a test failure if it is not one); heartbeat answers are skipped.
    func nextAck(sourceLocation: SourceLocation = #_sourceLocation) async throws -> AckLine? {
        var next = try await nextLine()
        while let line = next, line.readableBytesView.starts(with: #"{"heartbeat":"#.utf8) { next = try await nextLine() }
        guard let line = next else { return nil }
        let ack = AckLine.parse(line)
        #expect(ack != nil, "not an ack line: \(String(buffer: line))", sourceLocation: sourceLocation)
        return ack
    }

    /// Reads acks until one acknowledges `sequence` or more.
    func waitForAck(_ sequence: UInt64, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        while let ack = try await nextAck(sourceLocation: sourceLocation) {
            if case .ack(let value) = ack, value >= sequence {
                #expect(value == sequence, sourceLocation: sourceLocation)
                return
            }
        }
        Issue.record("response ended before ack \(sequence)", sourceLocation: sourceLocation)
    }

    /// Ends the upload and reads the rest of the response.
    func close() async throws -> [AckLine] {
        finishUpload()
        var rest: [AckLine] = []
        while let ack = try await nextAck() { rest.append(ack) }
        return rest
    }

    /// Reads the response to its end, tolerating a connection that the collector closed.
    func readUntilEnd() async -> [AckLine] {
        var lines: [AckLine] = []
        do {
            while let ack = try await nextAck() { lines.append(ack) }
        } catch {}
        return lines
    }
}

/// The stored line of `recordLine(sequence)` with its newline, built by hand as earlier collectors wrote it (not
/// with `StoredLine`): for data directories a test lays out itself.
func handWrittenStoredLine(_ agent: String, _ epoch: UInt64, _ sequence: UInt64) -> String {
    #"{"agent":""# + agent + #"","epoch":"# + String(epoch) + ","
        + String(decoding: recordLine(sequence).dropFirst(), as: UTF8.self) + "\n"
}

/// A stored line of records.jsonl.
struct StoredRecord: Equatable {
    var agent: String
    var epoch: UInt64
    var sequence: UInt64
    var object: NSDictionary
}

func readLines(_ path: String) throws -> [String] {
    guard FileManager.default.fileExists(atPath: path) else { return [] }
    let text = try String(contentsOfFile: path, encoding: .utf8)
    guard !text.isEmpty else { return [] }
    #expect(text.hasSuffix("\n"), "\(path) ends with a complete line")
    return text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
}

func jsonObject(_ line: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
}

func storedRecords(_ directory: String) throws -> [StoredRecord] {
    try readLines(directory + "/records.jsonl").map { line in
        let object = try jsonObject(line)
        return StoredRecord(
            agent: try #require(object["agent"] as? String), epoch: try #require((object["epoch"] as? NSNumber)?.uint64Value),
            sequence: try #require((object["seq"] as? NSNumber)?.uint64Value), object: object as NSDictionary)
    }
}

func storedSequences(_ directory: String, agent: String, epoch: UInt64) throws -> [UInt64] {
    try storedRecords(directory).filter { $0.agent == agent && $0.epoch == epoch }.map(\.sequence)
}
