import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport
import UplinkWire

/// Encoder → `WireLineWriter` → parser, for many random records; Foundation's JSON reader as a second opinion.
@Suite(.computeBound) struct RoundTripTests {
    /// The wire line (without its `\n`) for `frame` sent as `sequence`, the frame optionally handed over in two parts.
    static func line(sequence: UInt64, frame: [UInt8], splitAt split: Int? = nil) -> [UInt8] {
        var buffer = ByteBufferAllocator().buffer(capacity: 0)
        _ = frame.withUnsafeBytes { raw in
            if let split {
                WireLineWriter.appendRecordLine(
                    sequence: sequence, frame: UnsafeRawBufferPointer(rebasing: raw[..<split]),
                    UnsafeRawBufferPointer(rebasing: raw[split...]), to: &buffer)
            } else {
                WireLineWriter.appendRecordLine(sequence: sequence, frame: raw, to: &buffer)
            }
        }
        var bytes = buffer.readBytes(length: buffer.readableBytes)!
        #expect(bytes.last == UInt8(ascii: "\n"))
        bytes.removeLast()
        #expect(!bytes.contains(UInt8(ascii: "\n")), "one record is one line")
        return bytes
    }

    static func expectEquivalent(_ decoded: Record, _ original: Record, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(decoded.timestamp == original.timestamp, sourceLocation: sourceLocation)
        #expect(decoded.source == original.source, sourceLocation: sourceLocation)
        switch (decoded.payload, original.payload) {
        case (.metric(let a), .metric(let b)):
            #expect(a.name == b.name, sourceLocation: sourceLocation)
            #expect(a.unit == b.unit, sourceLocation: sourceLocation)
            #expect(a.tags == b.tags, sourceLocation: sourceLocation)
            if b.value.isFinite {
                #expect(a.value == b.value, "\(b.value)", sourceLocation: sourceLocation)
            } else {
                #expect(a.value.isNaN, "non-finite values travel as null", sourceLocation: sourceLocation)
            }
        case (.log(let a), .log(let b)):
            #expect(a == b, sourceLocation: sourceLocation)
        default:
            Issue.record("payload kind changed: \(decoded) vs \(original)", sourceLocation: sourceLocation)
        }
    }

    /// Checks that Foundation reads `bytes` as a JSON object and finds the same strings and numbers.
    ///
    /// Two quirks of Foundation's JSON reader on Linux are allowed for: it drops a U+FEFF that starts a string or
    /// follows an escape sequence (so strings are compared without U+FEFF), and its number conversion is not
    /// correctly rounded (so numbers are compared with a relative tolerance of 1e-14; our own parser's exact
    /// results are checked in `expectEquivalent`).
    static func expectFoundationAgrees(_ bytes: [UInt8], sequence: UInt64, record: Record) throws {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        func string(_ key: String) -> String? { (object[key] as? String).map(withoutBOM) }
        func tags(_ key: String) -> [String: String] {
            let tags = object[key] as? [String: String] ?? [:]
            return Dictionary(tags.map { (withoutBOM($0.key), withoutBOM($0.value)) }, uniquingKeysWith: { _, last in last })
        }
        func expected(_ tags: [UplinkCore.Tag]) -> [String: String] {
            Dictionary(tags.map { (withoutBOM($0.key), withoutBOM($0.value)) }, uniquingKeysWith: { _, last in last })
        }
        #expect((object["seq"] as? NSNumber)?.uint64Value == sequence)
        #expect((object["ts"] as? NSNumber)?.int64Value == record.timestamp)
        #expect(string("src") == withoutBOM(record.source))
        switch record.payload {
        case .metric(let metric):
            #expect(string("metric") == withoutBOM(metric.name))
            #expect(string("unit") == withoutBOM(metric.unit))
            #expect(tags("tags") == expected(metric.tags))
            if metric.value.isFinite {
                let value = try #require((object["value"] as? NSNumber)?.doubleValue)
                #expect(abs(value - metric.value) <= max(abs(metric.value) * 1e-14, 1e-300), "\(value) vs \(metric.value)")
            } else {
                #expect(object["value"] is NSNull)
            }
        case .log(let log):
            #expect(string("log") == withoutBOM(log.message))
            #expect(tags("fields") == expected(log.fields))
        }
    }

    static func withoutBOM(_ string: String) -> String {
        String(String.UnicodeScalarView(string.unicodeScalars.filter { $0 != "\u{FEFF}" }))
    }

    @Test func randomRecordsRoundTrip() throws {
        var random = SplitMix64(seed: 0x5EED_0001)
        let encoder = NDJSONFrameEncoder()
        for _ in 0..<3000 {
            let record = random.record()
            let sequence = Bool.random(using: &random) ? UInt64.random(in: WireIntegers.sequence, using: &random) : UInt64.random(in: 1...1000, using: &random)
            var frame: [UInt8] = []
            encoder.encodeFrame(record, into: &frame)
            let bytes = Self.line(sequence: sequence, frame: frame)
            switch decodeLine(bytes) {
            case .success(.record(let decodedSequence, let decoded)):
                #expect(decodedSequence == sequence)
                Self.expectEquivalent(decoded, record)
            case let other:
                Issue.record("\(other) for \(String(decoding: bytes, as: UTF8.self))")
                continue
            }
            #expect(scanLine(bytes) == .success(.record(sequence: sequence, timestamp: record.timestamp, origin: nil)))
            try Self.expectFoundationAgrees(bytes, sequence: sequence, record: record)
        }
    }

    /// Long and synchronous (about 70,000 lines through Foundation too): it yields now and then, so that it does
    /// not hold one of the test runner's few threads for half a minute while timing-sensitive suites wait.
    @Test func rawLogBytesAreRepairedLikeSwiftDoes() async throws {
        var random = SplitMix64(seed: 0x5EED_0002)
        let encoder = NDJSONFrameEncoder()
        func check(_ message: [UInt8]) throws {
            var frame: [UInt8] = []
            message.withUnsafeBytes {
                encoder.encodeLogFrame(timestamp: 42, source: "tail", message: $0, fields: [Tag("path", "/var/log/x")], into: &frame)
            }
            let bytes = Self.line(sequence: 9, frame: frame)
            let expected = Record.log(
                String(decoding: message, as: UTF8.self), fields: [Tag("path", "/var/log/x")], source: "tail", timestamp: 42)
            guard case .success(.record(9, let decoded)) = decodeLine(bytes) else {
                Issue.record("not decoded: \(message) → \(String(decoding: bytes, as: UTF8.self))")
                return
            }
            #expect(decoded == expected, "\(message)")
            try Self.expectFoundationAgrees(bytes, sequence: 9, record: expected)
        }
        for index in 0..<3000 {
            try check(random.messyBytes())
            if index % 250 == 0 { await Task.yield() }
        }
        // Every one- and two-byte message.
        for first in UInt8.min...UInt8.max {
            try check([first])
            for second in UInt8.min...UInt8.max { try check([first, second]) }
            await Task.yield()
        }
    }

    @Test func framesHandedOverInTwoPartsGiveTheSameLine() throws {
        var random = SplitMix64(seed: 0x5EED_0003)
        let encoder = NDJSONFrameEncoder()
        for _ in 0..<30 {
            let record = random.record()
            var frame: [UInt8] = []
            encoder.encodeFrame(record, into: &frame)
            let whole = Self.line(sequence: 77, frame: frame)
            for split in 0...frame.count { #expect(Self.line(sequence: 77, frame: frame, splitAt: split) == whole) }
        }
    }

    @Test(arguments: [
        (0.0, "0"), (-0.0, "0"), (1e-7, "1e-07"), (0.1, "0.1"), (-1.5, "-1.5"), (12.5, "12.5"), (1e300, "1e+300"),
        (9_007_199_254_740_991, "9007199254740991"), (9_007_199_254_740_992, "9007199254740992.0"),
        (-123_456, "-123456"), (Double.nan, "null"), (Double.infinity, "null"), (-Double.infinity, "null"),
    ] as [(Double, String)])
    func numbersAreWrittenAsJSON(value: Double, text: String) throws {
        var frame: [UInt8] = []
        NDJSONFrameEncoder().encodeFrame(.metric("m", value: value, unit: "", source: "s", timestamp: 1), into: &frame)
        let line = String(decoding: Self.line(sequence: 1, frame: frame), as: UTF8.self)
        #expect(line == #"{"seq":1,"ts":1,"src":"s","metric":"m","value":"# + text + #","unit":""}"#)
        let (_, record) = try #require(decodeRecord(line))
        guard case .metric(let metric) = record.payload else { return }
        if value.isFinite { #expect(metric.value == value) } else { #expect(metric.value.isNaN) }
    }

    @Test func heartbeatsRoundTrip() {
        for timestamp in [Int64.min, -1, 0, 1, 1_763_704_833_000_000_000, Int64.max] {
            var buffer = ByteBufferAllocator().buffer(capacity: 0)
            WireLineWriter.appendHeartbeat(timestamp: timestamp, to: &buffer)
            var bytes = buffer.readBytes(length: buffer.readableBytes)!
            #expect(bytes.removeLast() == UInt8(ascii: "\n"))
            #expect(decodeLine(bytes) == .success(.heartbeat(timestamp: timestamp)))
        }
    }
}

@Suite(.computeBound) struct OriginWireTests {
    @Test func logRecordsCarryTheirOriginThroughEncodeAndDecode() throws {
        let record = Record(
            timestamp: 5, source: "app",
            payload: .log(LogLine(message: "x", fields: [Tag("path", "/l")], origin: RecordOrigin(id: 1 << 62, offset: 123))))
        var frame: [UInt8] = []
        NDJSONFrameEncoder().encodeFrame(record, into: &frame)
        #expect(String(decoding: frame, as: UTF8.self) == #""ts":5,"src":"app","log":"x","fields":{"path":"/l"},"origin":4611686018427387904,"offset":123}"# + "\n")
        let line = Array(#"{"seq":9,"#.utf8) + frame.dropLast()
        let decoded = try line.withUnsafeBytes { try WireLineParser.decode($0) }
        #expect(decoded == .record(sequence: 9, record))
        let summary = try line.withUnsafeBytes { try WireLineParser.scan($0) }
        #expect(summary == .record(sequence: 9, timestamp: 5, origin: RecordOrigin(id: 1 << 62, offset: 123)))
    }

    @Test func theBatchEncoderWritesWhatTheRecordEncoderWrites() {
        var batch = LogLineBatch(source: "app", fields: [Tag("path", "/var/log/a")], originID: 77)
        let messages: [[UInt8]] = [Array("plain".utf8), [0xFF, 0x22, 0x0A], [], Array("long \u{1F600}".utf8)]
        for (index, message) in messages.enumerated() {
            message.withUnsafeBytes {
                batch.append(
                    message: $0, timestamp: Int64(index), originOffset: UInt64(10 * (index + 1)),
                    extraFields: index == 3 ? [Tag("truncated", "99")] : [])
            }
        }
        let encoder = NDJSONFrameEncoder()
        let (frames, ends) = encoder.encodeLogFrames(batch)
        for index in 0..<batch.count {
            let fast = Array(frames[(index == 0 ? 0 : ends[index - 1])..<ends[index]])
            var slow: [UInt8] = []
            encoder.encodeFrame(batch.record(at: index), into: &slow)
            #expect(fast == slow)
        }
    }

    @Test func originKeysAreValidated() {
        func error(_ text: String) -> String? {
            do {
                _ = try Array(text.utf8).withUnsafeBytes { try WireLineParser.scan($0) }
                return nil
            } catch let error as WireDecodingError {
                return error.code
            } catch {
                return "\(error)"
            }
        }
        #expect(error(#"{"seq":1,"ts":1,"src":"a","log":"x","origin":3}"#) == "missing_key")
        #expect(error(#"{"seq":1,"ts":1,"src":"a","log":"x","offset":3}"#) == "missing_key")
        #expect(error(#"{"seq":1,"ts":1,"src":"a","log":"x","origin":0,"offset":3}"#) == "invalid_value")
        #expect(error(#"{"seq":1,"ts":1,"src":"a","log":"x","origin":"a","offset":3}"#) == "wrong_type")
        #expect(error(#"{"seq":1,"ts":1,"src":"a","metric":"m","value":1,"origin":2,"offset":3}"#) == "conflicting_keys")
        #expect(error(#"{"heartbeat":1,"origin":2}"#) == "conflicting_keys")
        #expect(error(#"{"seq":1,"ts":1,"src":"a","log":"x","origin":2,"offset":0}"#) == nil)
    }
}
