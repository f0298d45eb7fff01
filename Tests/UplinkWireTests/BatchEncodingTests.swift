import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport
import UplinkWire

/// The byte-level batch path (`encodeLogFrames`; a single line goes through its record) against the record path,
/// and the raw writer's strings and integers against simple reference implementations.
@Suite(.computeBound) struct BatchEncodingTests {
    /// A random batch: messy messages, timestamps that often repeat (lines read together share one), with and
    /// without batch fields and origin, some lines with fields of their own (both kinds of `append`).
    static func randomBatch(_ random: inout SplitMix64) -> LogLineBatch {
        let fields = Bool.random(using: &random) ? [] : random.tags()
        let originID = Bool.random(using: &random) ? 0 : UInt64.random(in: 1...UInt64(Int64.max), using: &random)
        var batch = LogLineBatch(source: random.string(maxLength: 10), fields: fields, originID: originID)
        var timestamp = Int64.random(in: Int64.min...Int64.max, using: &random)
        var offset: UInt64 = 0
        for _ in 0..<Int.random(in: 0...40, using: &random) {
            switch Int.random(in: 0..<4, using: &random) {
            case 0: timestamp = Int64.random(in: Int64.min...Int64.max, using: &random)
            case 1: timestamp = Int64.random(in: 0...2_000_000_000_000_000_000, using: &random)
            default: break
            }
            let message = Bool.random(using: &random)
                ? random.messyBytes(maxLength: 300) : Array(random.string(maxLength: 120).utf8)
            offset += UInt64(message.count + 1)
            message.withUnsafeBytes { message in
                switch Int.random(in: 0..<6, using: &random) {
                case 0:
                    batch.append(
                        message: message, timestamp: timestamp, originOffset: offset, extraField: "truncated",
                        decimal: UInt64.random(in: 0...UInt64.max, using: &random))
                case 1:
                    batch.append(message: message, timestamp: timestamp, originOffset: offset, extraFields: random.tags())
                default:
                    batch.append(message: message, timestamp: timestamp, originOffset: offset)
                }
            }
        }
        return batch
    }

    @Test("batches whose source, fields or origin come again, or differ in one of them only, encode as their records do")
    func recurringLayouts() throws {
        // More combinations than the encoder keeps layouts for, in an order that comes back to each: a layout kept
        // for one must never serve another.
        let keys: [(source: String, fields: [UplinkCore.Tag], originID: UInt64)] = [
            ("app", [], 7), ("app", [], 8), ("app", [UplinkCore.Tag("host", "a")], 7), ("app", [UplinkCore.Tag("host", "b")], 7),
            ("sys", [], 7), ("sys", [], 0), ("app", [], 0),
        ] + (1...6).map { ("s\($0)", [], UInt64($0)) }
        var random = SplitMix64(seed: 0x5EED_0B02)
        let encoder = NDJSONFrameEncoder()
        for round in 0..<300 {
            let key = keys[(round * 5 + round / keys.count) % keys.count]
            var batch = LogLineBatch(source: key.source, fields: key.fields, originID: key.originID)
            for line in 0..<Int.random(in: 1...3, using: &random) {
                Array("round \(round) line \(line)".utf8).withUnsafeBytes { message in
                    batch.append(message: message, timestamp: Int64(round), originOffset: UInt64(round * 10 + line))
                }
            }
            try Self.expectBatchFramesAreRecordFrames(batch, encoder, "round \(round), \(key)")
        }
    }

    @Test func batchFramesAreTheRecordFramesByteForByte() throws {
        var random = SplitMix64(seed: 0x5EED_0B01)
        let encoder = NDJSONFrameEncoder()
        for _ in 0..<400 {
            let batch = Self.randomBatch(&random)
            let (frames, ends) = encoder.encodeLogFrames(batch)
            try #require(ends.count == batch.count)
            #expect(ends.last ?? 0 == frames.count)
            var start = 0
            for index in 0..<batch.count {
                let frame = Array(frames[start..<ends[index]])
                start = ends[index]
                let record = batch.record(at: index)
                var expected: [UInt8] = []
                encoder.encodeFrame(record, into: &expected)
                #expect(frame == expected, "line \(index): \(String(decoding: frame, as: UTF8.self))")
                var single: [UInt8] = [1, 2, 3]
                encoder.encodeLogFrame(batch, line: index, into: &single)
                #expect(single == [1, 2, 3] + expected)
                #expect(encoder.frame(for: record) == expected)

                let line = RoundTripTests.line(sequence: UInt64(index + 1), frame: frame)
                #expect(decodeLine(line) == .success(.record(sequence: UInt64(index + 1), record)))
                #expect(
                    scanLine(line)
                        == .success(.record(sequence: UInt64(index + 1), timestamp: record.timestamp, origin: batch.origin(of: index))))
            }
        }
    }

    /// A batch whose messages are all control bytes writes six bytes per byte: far more than the room the encoder
    /// starts with (about the messages' size), so it moves to more room several times mid-batch; plain lines before
    /// and after, with shared timestamps, check that frames and the copied `"ts":…` prefix survive each move.
    @Test func aBatchThatEscapesEverythingMatchesTheRecordPath() throws {
        let encoder = NDJSONFrameEncoder()
        var batch = LogLineBatch(source: "esc", fields: [Tag("path", "/var/log/e")], originID: 9)
        var offset: UInt64 = 0
        for index in 0..<600 {
            let message: [UInt8] = index % 200 < 20
                ? Array("plain line \(index)".utf8) : [UInt8](repeating: UInt8(1 + index % 31), count: 150 + index % 7)
            offset += UInt64(message.count + 1)
            message.withUnsafeBytes {
                batch.append(message: $0, timestamp: Int64(index / 3), originOffset: offset)
            }
        }
        let frames = try Self.expectBatchFramesAreRecordFrames(batch, encoder, "escaped")
        #expect(frames.count > 6 * batch.messageBytes.count)
    }

    /// Encodes `batch` in one pass and expects each line's frame to be its record's, the frames back to back;
    /// returns the frames.
    @discardableResult
    static func expectBatchFramesAreRecordFrames(
        _ batch: LogLineBatch, _ encoder: NDJSONFrameEncoder, _ label: String
    ) throws -> [UInt8] {
        let (frames, ends) = encoder.encodeLogFrames(batch)
        try #require(ends.count == batch.count, "\(label)")
        var start = 0
        for index in 0..<batch.count {
            var expected: [UInt8] = []
            encoder.encodeFrame(batch.record(at: index), into: &expected)
            #expect(Array(frames[start..<ends[index]]) == expected, "\(label), line \(index)")
            start = ends[index]
        }
        #expect(start == frames.count, "\(label)")
        return frames
    }

    @Test func anEmptyBatchHasNoFrames() {
        let (frames, ends) = NDJSONFrameEncoder().encodeLogFrames(LogLineBatch(source: "s", fields: [], originID: 3))
        #expect(frames.isEmpty)
        #expect(ends.isEmpty)
    }

    @Test func aBatchLineLooksAsDocumented() {
        var batch = LogLineBatch(source: "app", fields: [Tag("path", "/var/log/a")], originID: 77)
        Array("one".utf8).withUnsafeBytes { batch.append(message: $0, timestamp: 5, originOffset: 4) }
        Array("t\"wo".utf8).withUnsafeBytes {
            batch.append(message: $0, timestamp: 5, originOffset: 9, extraField: "truncated", decimal: 1234)
        }
        Array("three".utf8).withUnsafeBytes { batch.append(message: $0, timestamp: -6, originOffset: 15) }
        let (frames, ends) = NDJSONFrameEncoder().encodeLogFrames(batch)
        let text = String(decoding: frames, as: UTF8.self)
        #expect(text == """
            "ts":5,"src":"app","log":"one","fields":{"path":"/var/log/a"},"origin":77,"offset":4}
            "ts":5,"src":"app","log":"t\\"wo","fields":{"path":"/var/log/a","truncated":"1234"},"origin":77,"offset":9}
            "ts":-6,"src":"app","log":"three","fields":{"path":"/var/log/a"},"origin":77,"offset":15}

            """)
        #expect(ends == text.split(separator: "\n").reduce(into: []) { $0.append(($0.last ?? 0) + $1.utf8.count + 1) })
        #expect(batch.extraFields(ofLine: 1) == [Tag("truncated", "1234")])
        #expect(batch.extraFields(ofLine: 0).isEmpty)
    }

    /// Escaping as the JSON grammar asks, after Swift's own repair of ill-formed UTF-8 (one byte at a time).
    static func referenceString(_ bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = [UInt8(ascii: "\"")]
        for byte in String(decoding: bytes, as: UTF8.self).utf8 {
            switch byte {
            case UInt8(ascii: "\""): output += Array(#"\""#.utf8)
            case UInt8(ascii: "\\"): output += Array(#"\\"#.utf8)
            case UInt8(ascii: "\n"): output += Array(#"\n"#.utf8)
            case UInt8(ascii: "\r"): output += Array(#"\r"#.utf8)
            case UInt8(ascii: "\t"): output += Array(#"\t"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                output += Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
        return output
    }

    @Test func specialBytesAreFoundAtEveryPositionOfTheEightByteSteps() {
        let specials: [[UInt8]] = [
            [UInt8(ascii: "\"")], [UInt8(ascii: "\\")], [0x0A], [0x01], [0x1F], [0x7F], [0x20], Array("é".utf8),
            Array("😀".utf8), [0xFF], [0xE2, 0x82], [0xC0, 0xAF],
        ]
        for length in 0...40 {
            let plain = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            for special in specials {
                for position in 0...length {
                    var message = plain
                    message.insert(contentsOf: special, at: position)
                    var output: [UInt8] = [9]
                    message.withUnsafeBytes { WireLineWriter.appendJSONString(bytes: $0, to: &output) }
                    #expect(output == [9] + Self.referenceString(message), "\(message)")
                }
            }
        }
    }

    @Test func randomStringsMatchTheReference() {
        var random = SplitMix64(seed: 0x5EED_0B02)
        for _ in 0..<5000 {
            let message = Bool.random(using: &random)
                ? random.messyBytes(maxLength: 80) : Array(random.string(maxLength: 60).utf8)
            var output: [UInt8] = []
            message.withUnsafeBytes { WireLineWriter.appendJSONString(bytes: $0, to: &output) }
            #expect(output == Self.referenceString(message), "\(message)")
            var viaString: [UInt8] = []
            WireLineWriter.appendJSONString(String(decoding: message, as: UTF8.self), to: &viaString)
            #expect(viaString == output)
        }
    }

    @Test func integersAreWrittenInDecimal() {
        var values: [UInt64] = [0, UInt64.max, UInt64(Int64.max), UInt64(Int64.max) + 1]
        var power: UInt64 = 1
        for _ in 0..<20 {
            values += [power - 1, power, power + 1]
            if power > UInt64.max / 10 { break }
            power *= 10
        }
        var random = SplitMix64(seed: 0x5EED_0B03)
        for _ in 0..<2000 {
            values.append(UInt64.random(in: 0...UInt64.max, using: &random) >> UInt64.random(in: 0...63, using: &random))
        }
        for value in values {
            var buffer = ByteBufferAllocator().buffer(capacity: 0)
            WireLineWriter.appendRecordLine(sequence: value, frame: UnsafeRawBufferPointer(start: nil, count: 0), to: &buffer)
            #expect(buffer.readString(length: buffer.readableBytes) == #"{"seq":\#(value),"#)
            if value <= UInt64(Int64.max) {
                for timestamp in [Int64(value), -Int64(value)] {
                    let frame = NDJSONFrameEncoder().frame(for: .log("", source: "s", timestamp: timestamp))
                    #expect(String(decoding: frame, as: UTF8.self) == #""ts":\#(timestamp),"src":"s","log":""}"# + "\n")
                }
            }
        }
        let frame = NDJSONFrameEncoder().frame(for: .log("", source: "s", timestamp: .min))
        #expect(String(decoding: frame, as: UTF8.self) == #""ts":-9223372036854775808,"src":"s","log":""}"# + "\n")
    }
}
