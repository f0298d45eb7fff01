import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkWire

@testable import UplinkCollector

/// The one writer and parser of the stored form `{"agent":"<id>","epoch":<E>,` + the received line's keys.
@Suite struct StoredLineTests {
    private func stored(_ batch: CollectorBatch) -> [String] {
        var bytes: [UInt8] = []
        StoredLine.append(batch, to: &bytes)
        #expect(bytes.last == UInt8(ascii: "\n"))
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init)
    }

    private func key(_ line: String) -> StoredLine.Key? {
        Array(line.utf8).withUnsafeBytes { StoredLine.key(of: $0) }
    }

    private func entry(_ line: String) -> LogEntry? {
        Array(line.utf8).withUnsafeBytes { StoredLine.entry(of: $0) }
    }

    @Test func writtenLinesParseBackToTheirKeyAndRecord() throws {
        let metric = Record.metric("cpu.user", value: 12.5, unit: "percent", tags: [Tag("cpu", "total")], source: "cpu", timestamp: 5)
        let log = Record(
            timestamp: -7, source: "app",
            payload: .log(
                LogLine(
                    message: "GET / \"quoted\"\n", fields: [Tag("path", "/var/log/app.log")],
                    origin: RecordOrigin(id: 9_000_000_000_000_000_001, offset: 4096))))
        let stream = StreamKey(agent: "edge-1.example:a_b-c", epoch: UInt64(Int64.max))
        let batch = CollectorBatch(
            stream: stream,
            lines: RecordLines([
                ByteBufferAllocator().buffer(bytes: recordLine(1, metric)),
                ByteBufferAllocator().buffer(bytes: Array(" \t".utf8) + recordLine(2, log)),
            ]),
            highestSequence: 2)
        let lines = stored(batch)
        #expect(lines.count == 2)
        for line in lines {
            #expect(line.hasPrefix(#"{"agent":"edge-1.example:a_b-c","epoch":9223372036854775807,"seq":"#))
            #expect(try JSONSerialization.jsonObject(with: Data(line.utf8)) is [String: Any])
        }
        #expect(key(lines[0]) == StoredLine.Key(stream: stream, sequence: 1))
        #expect(key(lines[1]) == StoredLine.Key(stream: stream, sequence: 2, origin: RecordOrigin(id: 9_000_000_000_000_000_001, offset: 4096)))
        #expect(entry(lines[0]) == LogEntry(agent: stream.agent, epoch: stream.epoch, sequence: 1, record: metric))
        #expect(entry(lines[1]) == LogEntry(agent: stream.agent, epoch: stream.epoch, sequence: 2, record: log))
    }

    @Test func everyCutOfALineIsRefused() {
        let line = stored(
            CollectorBatch(
                stream: StreamKey(agent: "a", epoch: 12), lines: RecordLines([ByteBufferAllocator().buffer(bytes: recordLine(3))]),
                highestSequence: 3))[0]
        #expect(key(line) != nil)
        let bytes = Array(line.utf8)
        for length in 0..<bytes.count {
            let cut = String(decoding: bytes[..<length], as: UTF8.self)
            #expect(key(cut) == nil, "\(cut)")
            #expect(entry(cut) == nil, "\(cut)")
        }
    }

    @Test(arguments: [
        // Not the stored prefix: missing, reordered, spaced, another key first.
        #"{"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"epoch":1,"agent":"a","seq":1,"ts":1,"src":"s","log":""}"#,
        #"{ "agent":"a","epoch":1,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent": "a","epoch":1,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agentx":"a","epoch":1,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"["agent","a"]"#,
        // Invalid agent ids: empty, a space, an escape, too long, unterminated.
        #"{"agent":"","epoch":1,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a b","epoch":1,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a\"b","epoch":1,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":""# + String(repeating: "a", count: 129) + #"","epoch":1,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":""# + String(repeating: "a", count: 4096),
        // Epochs out of range or not canonical: 0, 2^63, 2^64, 23 digits, negative, leading zero, a fraction, text.
        #"{"agent":"a","epoch":0,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a","epoch":9223372036854775808,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a","epoch":18446744073709551616,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a","epoch":99999999999999999999999,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a","epoch":-1,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a","epoch":01,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a","epoch":1.5,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a","epoch":x,"seq":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a","epoch":1"#,
        // A good prefix on a line that is not a record: no seq, a huge seq, a heartbeat, not JSON, trailing bytes.
        #"{"agent":"a","epoch":1,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a","epoch":1,"seq":9223372036854775808,"ts":1,"src":"s","log":""}"#,
        #"{"agent":"a","epoch":1,"heartbeat":1}"#,
        #"{"agent":"a","epoch":1,garbage"#,
        #"{"agent":"a","epoch":1,"seq":1,"ts":1,"src":"s","log":""}x"#,
        "",
    ])
    func hostileLinesAreRefused(_ line: String) {
        #expect(key(line) == nil)
        #expect(entry(line) == nil)
    }

    @Test func aBatchDecodesOnlyWhenASinkAsksAndOnce() {
        var text = ""
        for sequence: UInt64 in 1...3 {
            text += stored(
                CollectorBatch(
                    stream: StreamKey(agent: "f", epoch: 1), lines: RecordLines([ByteBufferAllocator().buffer(bytes: recordLine(sequence))]),
                    highestSequence: sequence))[0] + "\n"
            if sequence == 2 { text += "not a stored record\n" }
        }
        let batch = ForwardBatch(lines: ByteBufferAllocator().buffer(string: text))
        #expect(batch.count == 4)
        #expect(batch.unreadable == nil, "nothing is decoded before a sink asks")
        #expect(batch.entries.map(\.sequence) == [1, 2, 3])
        #expect(batch.unreadable?.count == 1)
        #expect(batch.unreadable.map { String(buffer: $0.lines) } == "not a stored record\n")
        #expect(ForwardBatch(lines: ByteBuffer()).count == 0)
    }
}
