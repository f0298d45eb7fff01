import Testing
import UplinkCore
import UplinkTestSupport
import UplinkWire
import NIOCore

func decodeLine(_ bytes: [UInt8]) -> Result<WireLine, WireDecodingError> {
    bytes.withUnsafeBytes { raw in Result { () throws(WireDecodingError) in try WireLineParser.decode(raw) } }
}

func scanLine(_ bytes: [UInt8]) -> Result<WireLineSummary, WireDecodingError> {
    bytes.withUnsafeBytes { raw in Result { () throws(WireDecodingError) in try WireLineParser.scan(raw) } }
}

func decodeLine(_ text: String) -> Result<WireLine, WireDecodingError> { decodeLine(Array(text.utf8)) }

/// Decodes a line that must be a record.
func decodeRecord(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> (UInt64, Record)? {
    switch decodeLine(text) {
    case .success(.record(let sequence, let record)):
        #expect(
            scanLine(Array(text.utf8)) == .success(.record(sequence: sequence, timestamp: record.timestamp, origin: nil)),
            sourceLocation: sourceLocation)
        return (sequence, record)
    case .success(let other):
        Issue.record("expected a record, got \(other)", sourceLocation: sourceLocation)
    case .failure(let error):
        Issue.record("expected a record, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

@Suite(.computeBound) struct WireLineParserTests {
    @Test func protocolExamples() throws {
        let metric = try #require(decodeRecord(
            #"{"seq":41,"ts":1763704818123456789,"src":"cpu","metric":"cpu.user","value":12.5,"unit":"percent","tags":{"cpu":"total"}}"#))
        #expect(metric.0 == 41)
        #expect(metric.1 == .metric("cpu.user", value: 12.5, unit: "percent", tags: [Tag("cpu", "total")], source: "cpu",
                                    timestamp: 1_763_704_818_123_456_789))
        let log = try #require(decodeRecord(
            #"{"seq":42,"ts":1763704818123999000,"src":"app","log":"GET /index 200","fields":{"path":"/var/log/app.log"}}"#))
        #expect(log.0 == 42)
        #expect(log.1 == .log("GET /index 200", fields: [Tag("path", "/var/log/app.log")], source: "app", timestamp: 1_763_704_818_123_999_000))
        #expect(decodeLine(#"{"heartbeat":1763704833000000000}"#) == .success(.heartbeat(timestamp: 1_763_704_833_000_000_000)))
        #expect(scanLine(Array(#"{"heartbeat":-5}"#.utf8)) == .success(.heartbeat(timestamp: -5)))
    }

    @Test func keysInAnyOrderWhitespaceAndUnknownKeys() throws {
        let line = """
             { "tags" : { "b" : "2" , "a" : "1" } , "future" : {"x":[1,-2.5e3,true,false,null,{"y":[]},"s\\u00e9"]},
            \t"value":-0.25,"unit":"","metric":"m","src":"s","ts":-7,"seq":9223372036854775807, "z":[] }\r
            """.split(separator: "\n").joined(separator: " ")
        let (sequence, record) = try #require(decodeRecord(line))
        #expect(sequence == UInt64(Int64.max))
        #expect(record == .metric("m", value: -0.25, unit: "", tags: [Tag("b", "2"), Tag("a", "1")], source: "s", timestamp: -7))
    }

    @Test func optionalKeysDefault() throws {
        let (_, metric) = try #require(decodeRecord(#"{"seq":1,"ts":0,"src":"","metric":"m","value":null}"#))
        guard case .metric(let value) = metric.payload else { Issue.record("not a metric"); return }
        #expect(value.value.isNaN)
        #expect(value.unit == "")
        #expect(value.tags.isEmpty)
        let (_, log) = try #require(decodeRecord(#"{"seq":1,"ts":0,"src":"s","log":"","fields":{}}"#))
        #expect(log == .log("", fields: [], source: "s", timestamp: 0))
    }

    @Test func integerLimits() throws {
        #expect(try #require(decodeRecord(#"{"seq":1,"ts":9223372036854775807,"src":"s","log":""}"#)).1.timestamp == Int64.max)
        #expect(try #require(decodeRecord(#"{"seq":1,"ts":-9223372036854775808,"src":"s","log":""}"#)).1.timestamp == Int64.min)
        #expect(decodeLine(#"{"heartbeat":-9223372036854775808}"#) == .success(.heartbeat(timestamp: Int64.min)))
    }

    @Test func escapesAndKeysWithEscapes() throws {
        let (sequence, record) = try #require(decodeRecord(
            #"{"s\u0065q":7,"\u0074s":1,"src":"a\"b\\c\/d\b\f\n\r\t\u0000\u0041\u00e9\u20AC\ud83d\ude00\uFFFF","l\u006fg":"é€😀"}"#))
        #expect(sequence == 7)
        #expect(record == .log("é€😀", source: "a\"b\\c/d\u{8}\u{C}\n\r\t\u{0}Aé€😀\u{FFFF}", timestamp: 1))
        // A key that only looks like a known one once unescaped is that key (and so a duplicate here).
        #expect(code(#"{"seq":1,"s\u0065q":2,"ts":1,"src":"a","log":""}"#) == "duplicate_key")
        // An escaped unknown key is skipped.
        #expect(decodeRecord(#"{"seq":1,"ts":1,"src":"a","log":"","\u00e9\n":1}"#) != nil)
    }

    @Test(arguments: [
        ("1e-7", 1e-7), ("-0", -0.0), ("-0.0", -0.0), ("0", 0), ("1E+2", 100), ("2.5e-3", 0.0025), ("-12.75", -12.75),
        ("12345678901234567890", 12_345_678_901_234_567_168), ("9007199254740993", 9_007_199_254_740_992),
        ("123456789012345", 123_456_789_012_345), ("1.7976931348623157e308", .greatestFiniteMagnitude),
        ("5e-324", .leastNonzeroMagnitude), ("1e400", .infinity), ("-1e400", -.infinity), ("0.1", 0.1),
    ] as [(String, Double)])
    func numbers(text: String, expected: Double) throws {
        let (_, record) = try #require(decodeRecord(#"{"seq":1,"ts":1,"src":"s","metric":"m","value":"# + text + "}"))
        guard case .metric(let metric) = record.payload else { Issue.record("not a metric"); return }
        #expect(metric.value == expected)
        #expect(metric.value.sign == expected.sign)
    }

    @Test func nestingDepth() {
        func nested(_ depth: Int) -> String {
            // The line's object is depth 1, so `depth - 1` arrays inside it.
            #"{"seq":1,"ts":1,"src":"s","log":"","x":"# + String(repeating: "[", count: depth - 1)
                + String(repeating: "]", count: depth - 1) + "}"
        }
        #expect(decodeRecord(nested(WireLineParser.maximumDepth)) != nil)
        #expect(code(nested(WireLineParser.maximumDepth + 1)) == "too_deep")
        #expect(code(nested(10_000)) == "too_deep")
        let objects = #"{"seq":1,"ts":1,"src":"s","log":"","x":"# + String(repeating: #"{"a":"#, count: 40) + "1"
            + String(repeating: "}", count: 41)
        #expect(code(objects) == "too_deep")
    }

    func code(_ line: String) -> String? { code(Array(line.utf8)) }

    func code(_ line: [UInt8]) -> String? {
        let scanned = scanLine(line)
        let decoded = decodeLine(line)
        switch (scanned, decoded) {
        case (.failure(let a), .failure(let b)):
            #expect(a == b, "scan and decode disagree")
            #expect(!a.message.isEmpty)
            #expect(a.offset >= 0 && a.offset <= line.count)
            return a.code
        default:
            return nil
        }
    }

    static let base = #""ts":1,"src":"s","log":"x""#

    @Test(arguments: [
        // Not JSON.
        ("", "invalid_json"), ("   ", "invalid_json"), ("{", "invalid_json"), (#"{"seq":1"#, "invalid_json"),
        (#"{"seq":1,}"#, "invalid_json"), ("{,}", "invalid_json"), (#"{"seq" 1}"#, "invalid_json"), ("{seq:1}", "invalid_json"),
        ("{'seq':1}", "invalid_json"), (#"{"seq":01,\#(base)}"#, "invalid_json"), (#"{"seq":1.,\#(base)}"#, "invalid_json"),
        (#"{"seq":-,\#(base)}"#, "invalid_json"), (#"{"seq":1e,\#(base)}"#, "invalid_json"), (#"{"seq":+1,\#(base)}"#, "invalid_json"),
        (#"{"seq":.5,\#(base)}"#, "invalid_json"), (#"{"seq":1,\#(base)}x"#, "invalid_json"), (#"{"seq":1,\#(base)} {}"#, "invalid_json"),
        (#"{"seq":1,\#(base),"x":nul}"#, "invalid_json"), (#"{"seq":1,\#(base),"x":tru}"#, "invalid_json"),
        (#"{"seq":1,\#(base),"x":[1,2,]}"#, "invalid_json"), (#"{"seq":1,\#(base),"x":[1 2]}"#, "invalid_json"),
        (#"{"seq":1,\#(base),"x":{"a"}}"#, "invalid_json"), (#"{"seq":1,\#(base),"x":{1:2}}"#, "invalid_json"),
        (#"{"seq":1,\#(base),"x":NaN}"#, "invalid_json"), (#"{"seq":1,\#(base),"x":Infinity}"#, "invalid_json"),
        (#"{"seq":1,"ts":1,"src":"s","log":"a\xb"}"#, "invalid_json"), (#"{"seq":1,"ts":1,"src":"s","log":"\u12"}"#, "invalid_json"),
        (#"{"seq":1,"ts":1,"src":"s","log":"\uZZZZ"}"#, "invalid_json"), (#"{"seq":1,"ts":1,"src":"s","log":"\ud800"}"#, "invalid_json"),
        (#"{"seq":1,"ts":1,"src":"s","log":"\udc00\ud800"}"#, "invalid_json"),
        (#"{"seq":1,"ts":1,"src":"s","log":"\ud800\u0041"}"#, "invalid_json"), (#"{"seq":1,"ts":1,"src":"s","log":"\ud800\n"}"#, "invalid_json"),
        (#"{"seq":1,"ts":1,"src":"s","log":"abc}"#, "invalid_json"), (#"{"seq":1,"ts":1,"src":"s","log":"abc\"#, "invalid_json"),
        ("{\"seq\":1,\"ts\":1,\"src\":\"s\",\"log\":\"a\tb\"}", "invalid_json"),
        ("{\"seq\":1,\"ts\":1,\"src\":\"s\",\"log\":\"a\u{1}b\"}", "invalid_json"),
        ("{\"seq\":1,\"ts\":1,\"src\":\"s\",\"log\":\"a\u{0}b\"}", "invalid_json"),
        ("\u{FEFF}{\"seq\":1,\(base)}", "invalid_json"), ("{\"seq\":1,\(base)}\u{e9}", "invalid_json"), ("x", "invalid_json"),
        // Not an object.
        ("[]", "not_an_object"), ("1", "not_an_object"), (#""x""#, "not_an_object"), (" null ", "not_an_object"),
        // Shape.
        ("{}", "missing_key"), (#"{"ts":1,"src":"s","log":"x"}"#, "missing_key"), (#"{"seq":1,"src":"s","log":"x"}"#, "missing_key"),
        (#"{"seq":1,"ts":1,"log":"x"}"#, "missing_key"), (#"{"seq":1,"ts":1,"src":"s"}"#, "missing_key"),
        (#"{"seq":1,"ts":1,"src":"s","metric":"m"}"#, "missing_key"), (#"{"seq":1,"ts":1,"src":"s","unit":"u","value":1}"#, "missing_key"),
        (#"{"seq":"1",\#(base)}"#, "wrong_type"), (#"{"seq":1.5,\#(base)}"#, "wrong_type"), (#"{"seq":1e3,\#(base)}"#, "wrong_type"),
        (#"{"seq":1.0,\#(base)}"#, "wrong_type"), (#"{"seq":null,\#(base)}"#, "wrong_type"), (#"{"seq":[1],\#(base)}"#, "wrong_type"),
        (#"{"seq":1,"ts":"1","src":"s","log":"x"}"#, "wrong_type"), (#"{"seq":1,"ts":1.0,"src":"s","log":"x"}"#, "wrong_type"),
        (#"{"seq":1,"ts":1,"src":1,"log":"x"}"#, "wrong_type"), (#"{"seq":1,"ts":1,"src":"s","log":null}"#, "wrong_type"),
        (#"{"seq":1,"ts":1,"src":"s","metric":null,"value":1}"#, "wrong_type"),
        (#"{"seq":1,"ts":1,"src":"s","metric":"m","value":"1"}"#, "wrong_type"),
        (#"{"seq":1,"ts":1,"src":"s","metric":"m","value":true}"#, "wrong_type"),
        (#"{"seq":1,"ts":1,"src":"s","metric":"m","value":1,"unit":1}"#, "wrong_type"),
        (#"{"seq":1,"ts":1,"src":"s","metric":"m","value":1,"tags":[]}"#, "wrong_type"),
        (#"{"seq":1,"ts":1,"src":"s","metric":"m","value":1,"tags":{"a":1}}"#, "wrong_type"),
        (#"{"seq":1,"ts":1,"src":"s","metric":"m","value":1,"tags":{"a":"1","b":{}}}"#, "wrong_type"),
        (#"{"seq":1,"ts":1,"src":"s","log":"x","fields":"f"}"#, "wrong_type"), (#"{"heartbeat":"1"}"#, "wrong_type"),
        (#"{"heartbeat":1.5}"#, "wrong_type"),
        (#"{"seq":0,\#(base)}"#, "invalid_value"), (#"{"seq":-1,\#(base)}"#, "invalid_value"), (#"{"seq":-0,\#(base)}"#, "invalid_value"),
        (#"{"seq":18446744073709551616,\#(base)}"#, "invalid_value"),
        (#"{"seq":9223372036854775808,\#(base)}"#, "invalid_value"), (#"{"seq":18446744073709551615,\#(base)}"#, "invalid_value"),
        (#"{"seq":1,"ts":1,"src":"s","log":"x","origin":9223372036854775808,"offset":0}"#, "invalid_value"),
        (#"{"seq":1,"ts":1,"src":"s","log":"x","origin":0,"offset":0}"#, "invalid_value"),
        (#"{"seq":1,"ts":1,"src":"s","log":"x","origin":1,"offset":9223372036854775808}"#, "invalid_value"),
        (#"{"seq":1,"ts":1,"src":"s","log":"x","origin":1,"offset":-1}"#, "invalid_value"),
        (#"{"seq":1,"ts":9223372036854775808,"src":"s","log":"x"}"#, "invalid_value"),
        (#"{"seq":1,"ts":-9223372036854775809,"src":"s","log":"x"}"#, "invalid_value"),
        (#"{"heartbeat":99999999999999999999}"#, "invalid_value"),
        (#"{"seq":1,"seq":1,\#(base)}"#, "duplicate_key"), (#"{"seq":1,\#(base),"src":"t"}"#, "duplicate_key"),
        (#"{"seq":1,"ts":1,"src":"s","metric":"m","value":1,"log":"x"}"#, "conflicting_keys"),
        (#"{"seq":1,"ts":1,"src":"s","metric":"m","value":1,"fields":{}}"#, "conflicting_keys"),
        (#"{"seq":1,"ts":1,"src":"s","log":"x","unit":""}"#, "conflicting_keys"),
        (#"{"seq":1,"ts":1,"src":"s","log":"x","tags":{}}"#, "conflicting_keys"),
        (#"{"heartbeat":1,"seq":1}"#, "conflicting_keys"), (#"{"heartbeat":1,"src":"s"}"#, "conflicting_keys"),
    ] as [(String, String)])
    func malformedLinesAreRejectedWithTheirCode(line: String, expected: String) {
        #expect(code(line) == expected, "\(line)")
    }

    @Test(arguments: [
        [0xFF], [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82], [0x80],
        [0xF0, 0x9F, 0x98], [0xC3, 0x28], [0xF8, 0x88, 0x80, 0x80, 0x80],
    ] as [[UInt8]])
    func invalidUTF8InStringsIsRejected(bytes: [UInt8]) {
        let inMessage = Array(#"{"seq":1,"ts":1,"src":"s","log":"ab"#.utf8) + bytes + Array(#"cd"}"#.utf8)
        #expect(code(inMessage) == "invalid_utf8")
        let inKey = Array(#"{"seq":1,"ts":1,"src":"s","log":"x",""#.utf8) + bytes + Array(#"":1}"#.utf8)
        #expect(code(inKey) == "invalid_utf8")
        // Long enough that the eight-bytes-at-a-time path meets the bad bytes.
        let late = Array(#"{"seq":1,"ts":1,"src":"s","log":"0123456789abcdef"#.utf8) + bytes + Array("0123456789\"}".utf8)
        #expect(code(late) == "invalid_utf8")
        // And at the very end, before an unterminated string.
        #expect(code(Array(#"{"seq":1,"ts":1,"src":"s","log":""#.utf8) + bytes) != nil)
    }

    @Test func everyControlCharacterIsRejectedRawAndAcceptedEscaped() throws {
        for byte in UInt8(0)..<0x20 {
            let raw = Array(#"{"seq":1,"ts":1,"src":"s","log":"abcdefghijkl"#.utf8) + [byte] + Array(#"z"}"#.utf8)
            #expect(code(raw) == "invalid_json")
            let hex = String(byte, radix: 16)
            let escaped = #"{"seq":1,"ts":1,"src":"s","log":"abcdefghijkl\u00"# + (hex.count == 1 ? "0" + hex : hex) + #"z"}"#
            let (_, record) = try #require(decodeRecord(escaped))
            #expect(record.payload == .log(LogLine(message: "abcdefghijkl" + String(Unicode.Scalar(byte)) + "z")))
        }
    }

    @Test func everyKeyReadsTheSameInTheAgentsFormAndAnyOther() throws {
        // The agent's form `"key":` is read by one eight-byte load; space before the colon, escapes, near misses and
        // a key too close to the line's end take the general path. Both must give the same answers.
        let forms: [(String) -> String] = [
            { #""\#($0)":"# }, { #""\#($0)" :"# }, { #""\#($0)"\#t: "# },
            { key in #""\#(key.utf8.map { "\\u00" + String($0, radix: 16) }.joined())":"# },
        ]
        for form in forms {
            let log = #"{\#(form("seq"))5,\#(form("ts"))-3,\#(form("src"))"s",\#(form("log"))"m",\#(form("fields")){"a":"b"},\#(form("origin"))7,\#(form("offset"))9}"#
            let decoded = try decodeLine(log).get()
            let origin = RecordOrigin(id: 7, offset: 9)
            #expect(decoded == .record(sequence: 5, Record(timestamp: -3, source: "s",
                                                           payload: .log(LogLine(message: "m", fields: [Tag("a", "b")], origin: origin)))),
                    "\(log)")
            let metric = #"{\#(form("seq"))1,\#(form("ts"))2,\#(form("src"))"c",\#(form("metric"))"m",\#(form("value"))0.5,\#(form("unit"))"u",\#(form("tags")){}}"#
            #expect(try decodeLine(metric).get()
                    == .record(sequence: 1, .metric("m", value: 0.5, unit: "u", tags: [], source: "c", timestamp: 2)))
            // A repeated key is caught on either path, at the repeat's opening quote.
            let repeated = #"{"seq":1,"ts":1,"src":"a","log":"",\#(form("src"))"b"}"#
            let error = try #require(decodeLine(repeated).failure)
            #expect(error.code == "duplicate_key" && error.offset == 35, "\(repeated): \(error)")
        }
        // Keys that share a known key's first bytes or length are other keys, skipped.
        for near in ["sez", "tsx", "t", "seqq", "Seq", "origins", "offse", "fields2", "lo"] {
            let line = #"{"seq":1,"ts":1,"src":"a","log":"","\#(near)":{"seq":2}}"#
            #expect(try decodeLine(line).get() == .record(sequence: 1, .log("", source: "a", timestamp: 1)), "\(line)")
        }
        // A known key in the line's last eight bytes, where the load would run past the end.
        #expect(decodeLine(#"{"seq":1,"ts":1,"src":"a","log":""}"#) == .success(.record(sequence: 1, .log("", source: "a", timestamp: 1))))
        #expect(decodeLine(#"{"ts":1,"src":"a","log":"","seq":1}"#) == .success(.record(sequence: 1, .log("", source: "a", timestamp: 1))))
    }

    @Test func errorsCarryOffsetsAndNameTheKey() throws {
        let wrongType = try #require(decodeLine(#"{"seq":"1","ts":1,"src":"s","log":"x"}"#).failure)
        #expect(wrongType.code == "wrong_type")
        #expect(wrongType.offset == 7)
        #expect(wrongType.message.contains("seq"))
        let missing = try #require(decodeLine(#"{"seq":1,"src":"s","log":"x"}"#).failure)
        #expect(missing.message.contains("'ts'"))
        let badUTF8 = try #require(decodeLine(Array(#"{"seq":1,"ts":1,"src":"s","log":"ab"#.utf8) + [0xFF] + Array(#""}"#.utf8)).failure)
        #expect(badUTF8.offset == 35)
        let tag = try #require(decodeLine(#"{"seq":1,"ts":1,"src":"s","metric":"m","value":1,"tags":{"core":2}}"#).failure)
        #expect(tag.message.contains("core"))
        #expect(String(describing: tag).hasPrefix("wrong_type at byte "))
    }

    @Test func scanAndDecodeTakeByteBuffers() throws {
        var buffer = ByteBufferAllocator().buffer(capacity: 0)
        buffer.writeString("xx" + #"{"heartbeat":3}"#)
        buffer.moveReaderIndex(forwardBy: 2)
        #expect(try WireLineParser.scan(buffer) == .heartbeat(timestamp: 3))
        #expect(try WireLineParser.decode(buffer) == .heartbeat(timestamp: 3))
        buffer.writeString("x")
        #expect(throws: WireDecodingError.self) { try WireLineParser.scan(buffer) }
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// The string scanner reads eight bytes at a time and jumps to the first one that needs attention: a special
/// byte at every place within and across those words must be found exactly where it is.
@Suite(.computeBound) struct WireStringScanningTests {
    private static let prefix = Array(#"{"seq":1,"ts":1,"src":"s","log":""#.utf8)

    private static func line(_ message: [UInt8]) -> [UInt8] { prefix + message + Array(#""}"#.utf8) }

    @Test func specialBytesAreFoundAtEveryPosition() throws {
        let specials: [(raw: [UInt8], decoded: String)] = [
            (Array(#"\""#.utf8), "\""), (Array(#"\\"#.utf8), "\\"), (Array(#"\n"#.utf8), "\n"),
            (Array(#"\u00e9"#.utf8), "é"), (Array("é".utf8), "é"), (Array("😀".utf8), "😀"),
        ]
        for length in 0...20 {
            for position in 0...length {
                for special in specials {
                    var message = Array(repeating: UInt8(ascii: "a"), count: length)
                    message.insert(contentsOf: special.raw, at: position)
                    let expected = String(repeating: "a", count: position) + special.decoded
                        + String(repeating: "a", count: length - position)
                    let (_, record) = try #require(decodeRecord(String(decoding: Self.line(message), as: UTF8.self)))
                    #expect(record == .log(expected, source: "s", timestamp: 1), "length \(length) position \(position)")
                }
            }
        }
    }

    @Test func badBytesAreReportedWhereTheyAre() {
        for length in 0...20 {
            for position in 0..<max(1, length) {
                for (bad, code) in [(UInt8(0x01), "invalid_json"), (0x1F, "invalid_json"), (0xFF, "invalid_utf8"), (0xC0, "invalid_utf8")] {
                    var message = Array(repeating: UInt8(ascii: "b"), count: length)
                    message.insert(bad, at: min(position, length))
                    guard case .failure(let error) = scanLine(Self.line(message)) else {
                        Issue.record("accepted byte \(bad) at \(position) of \(length)")
                        continue
                    }
                    #expect(error.code == code)
                    #expect(error.offset == Self.prefix.count + min(position, length), "byte \(bad) at \(position) of \(length)")
                }
            }
        }
    }

    private enum Expected {
        case value(UInt64)
        case code(String)
    }

    @Test func integersInEveryFormGiveTheSameAnswers() {
        let base = #""src":"s","log":"x""#
        let cases: [(String, Expected)] = [
            ("1", .value(1)), ("9", .value(9)), ("10", .value(10)), ("9223372036854775807", .value(UInt64(Int64.max))),
            ("9223372036854775808", .code("invalid_value")), ("18446744073709551615", .code("invalid_value")),
            (String(repeating: "9", count: 5000), .code("invalid_value")), ("-" + String(repeating: "1", count: 5000), .code("invalid_value")),
            ("0", .code("invalid_value")), ("00", .code("invalid_json")), ("01", .code("invalid_json")),
            ("-1", .code("invalid_value")), ("1.0", .code("wrong_type")), ("1e2", .code("wrong_type")),
            ("1E2", .code("wrong_type")), ("18446744073709551616", .code("invalid_value")),
            ("99999999999999999999", .code("invalid_value")), ("1x", .code("invalid_json")),
        ]
        for (text, expected) in cases {
            let result = scanLine(Array(#"{"seq":\#(text),"ts":1,\#(base)}"#.utf8))
            switch (result, expected) {
            case (.success(.record(let sequence, _, _)), .value(let value)): #expect(sequence == value, "\(text)")
            case (.failure(let error), .code(let code)): #expect(error.code == code, "\(text)")
            default: Issue.record("\(text): got \(result), expected \(expected)")
            }
        }
        #expect(
            scanLine(Array(#"{"seq":1,"ts":9223372036854775807,\#(base)}"#.utf8))
                == .success(.record(sequence: 1, timestamp: .max, origin: nil)))
        #expect((try? scanLine(Array(#"{"seq":1,"ts":9223372036854775808,\#(base)}"#.utf8)).get()) == nil)
        #expect(scanLine(Array(#"{"seq":1,"ts":1,\#(base),"origin":7,"offset":0}"#.utf8))
            == .success(.record(sequence: 1, timestamp: 1, origin: RecordOrigin(id: 7, offset: 0))))
        if case .failure(let error) = scanLine(Array(#"{"seq":1,"ts":1,\#(base),"origin":0,"offset":0}"#.utf8)) {
            #expect(error.code == "invalid_value")
        } else {
            Issue.record("origin 0 accepted")
        }
    }
}

/// `NDJSONFrameEncoder.timestamp(ofFramePrefix:)`: the status' oldest-record age reads it from the ring.
@Suite("Frame timestamps", .computeBound)
struct FrameTimestampTests {
    @Test("the timestamp of an encoded frame is read back from its first bytes")
    func roundTrip() {
        let record = Record(timestamp: 1_763_704_818_123_456_789, source: "cpu", payload: .log(LogLine(message: "hello")))
        let frame = NDJSONFrameEncoder().frame(for: record)
        let prefix = Array(frame.prefix(NDJSONFrameEncoder.timestampPrefixBytes))
        #expect(NDJSONFrameEncoder.timestamp(ofFramePrefix: prefix) == 1_763_704_818_123_456_789)
    }

    @Test("anything else gives nil, never a trap", arguments: [
        "", "\"ts\":", "\"ts\":x", "{\"seq\":1,\"ts\":5", "\"ts\":99999999999999999999", "\"tz\":5", "\"ts\":-5",
    ])
    func refused(_ text: String) {
        #expect(NDJSONFrameEncoder.timestamp(ofFramePrefix: Array(text.utf8)) == nil)
    }

    @Test("a frame cut inside its digits reads the digits it has")
    func cut() {
        #expect(NDJSONFrameEncoder.timestamp(ofFramePrefix: Array("\"ts\":1234".utf8)) == 1234)
    }
}
