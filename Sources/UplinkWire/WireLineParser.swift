import NIOCore
import UplinkCore

/// What a body line is, as `WireLineParser.scan` reports it without building the record.
public enum WireLineSummary: Sendable, Equatable {
    /// A metric or log record with this sequence number and `ts` (nanoseconds since the Unix epoch); `origin` for a
    /// log line that names where it ends in the stream it was read from.
    case record(sequence: UInt64, timestamp: Int64, origin: RecordOrigin?)
    /// A heartbeat sent at this time (nanoseconds since the Unix epoch).
    case heartbeat(timestamp: Int64)
    /// An agent's remote configuration status, `{"config_status":{…}}` (read in full: these lines are rare).
    case configStatus(ConfigStatus)
}

/// A fully decoded body line.
public enum WireLine: Sendable, Equatable {
    /// A record and its sequence number. A `null` metric value decodes to `Double.nan`.
    case record(sequence: UInt64, Record)
    /// A heartbeat sent at this time (nanoseconds since the Unix epoch).
    case heartbeat(timestamp: Int64)
    /// An agent's remote configuration status, `{"config_status":{…}}`.
    case configStatus(ConfigStatus)
}

/// Reads the body lines of docs/protocol.md: one JSON object per line, without its `\n` terminator.
///
/// The parser is byte-level (no `JSONDecoder`) and validating: the whole line must be one well-formed JSON object
/// (RFC 8259, strings well-formed UTF-8) of the protocol's shape. Keys may come in any order; unknown keys are
/// skipped, including nested values up to `maximumDepth`. Known keys may appear once.
///
/// A record needs `seq` (integer from 1 to 2^63 − 1, `WireIntegers.sequence`), `ts` (integer), `src` (string) and either `metric` (string) with `value`
/// (number or `null`) and optionally `unit` (string) and `tags` (object of strings), or `log` (string) with
/// optionally `fields` (object of strings). A heartbeat is `{"heartbeat":<integer>}`. A remote configuration
/// status is `{"config_status":{…}}` with nothing beside it, read strictly by `ConfigStatus.parse`.
public enum WireLineParser {
    /// Deepest nesting of arrays and objects accepted inside a line, counting the line's own object as 1.
    public static let maximumDepth = 32

    /// Validates `line` and tells what it is, without allocating on valid input.
    public static func scan(_ line: UnsafeRawBufferPointer) throws(WireDecodingError) -> WireLineSummary {
        let scanner = JSONScanner(line, maximumDepth: maximumDepth)
        let layout = try LineLayout(validating: scanner)
        if let heartbeat = layout.heartbeat { return .heartbeat(timestamp: heartbeat) }
        if layout.has(.configStatus) { return .configStatus(try ConfigStatus.parse(line)) }
        return .record(sequence: layout.sequence, timestamp: layout.timestamp, origin: layout.origin)
    }

    /// Validates `line` (the readable bytes) and tells what it is; see `scan(_:)-(UnsafeRawBufferPointer)`.
    public static func scan(_ line: ByteBuffer) throws(WireDecodingError) -> WireLineSummary {
        try line.withUnsafeReadableBytes { bytes in
            Result { () throws(WireDecodingError) in try scan(bytes) }
        }.get()
    }

    /// Validates and decodes `line` into a record or a heartbeat.
    public static func decode(_ line: UnsafeRawBufferPointer) throws(WireDecodingError) -> WireLine {
        let scanner = JSONScanner(line, maximumDepth: maximumDepth)
        let layout = try LineLayout(validating: scanner)
        if let heartbeat = layout.heartbeat { return .heartbeat(timestamp: heartbeat) }
        if layout.has(.configStatus) { return .configStatus(try ConfigStatus.parse(line)) }
        let source = scanner.string(layout.source)
        let timestamp = layout.timestamp
        let record: Record
        if let metric = layout.metric {
            let value: Double
            if let number = layout.value { value = scanner.double(number) } else { value = .nan }
            record = .metric(
                scanner.string(metric), value: value, unit: layout.unit.map { scanner.string($0) } ?? "",
                tags: layout.tags.map { readStringObject(scanner, at: $0) } ?? [], source: source, timestamp: timestamp)
        } else {
            let line = LogLine(
                message: scanner.string(layout.log!), fields: layout.fields.map { readStringObject(scanner, at: $0) } ?? [],
                origin: layout.origin)
            record = Record(timestamp: timestamp, source: source, payload: .log(line))
        }
        return .record(sequence: layout.sequence, record)
    }

    /// Validates and decodes `line` (the readable bytes); see `decode(_:)-(UnsafeRawBufferPointer)`.
    public static func decode(_ line: ByteBuffer) throws(WireDecodingError) -> WireLine {
        try line.withUnsafeReadableBytes { bytes in
            Result { () throws(WireDecodingError) in try decode(bytes) }
        }.get()
    }

    /// Reads an already validated object of strings starting at `offset` (its `{`).
    private static func readStringObject(_ scanner: JSONScanner, at offset: Int) -> [Tag] {
        var scanner = scanner
        scanner.index = offset + 1
        var tags: [Tag] = []
        scanner.skipWhitespace()
        while scanner.current == UInt8(ascii: "\"") {
            // Cannot fail: the object was validated by `LineLayout.scanStringObject`.
            guard let key = try? scanner.scanString() else { break }
            scanner.skipWhitespace()
            scanner.index += 1  // ':'
            scanner.skipWhitespace()
            guard let value = try? scanner.scanString() else { break }
            tags.append(Tag(scanner.string(key), scanner.string(value)))
            scanner.skipWhitespace()
            if scanner.current == UInt8(ascii: ",") {
                scanner.index += 1
                scanner.skipWhitespace()
            }
        }
        return tags
    }
}

/// The positions of the known keys' values in a validated line.
private struct LineLayout {
    /// Known keys, as bits of `present`.
    enum Key: UInt16 {
        case seq = 1, ts = 2, src = 4, metric = 8, value = 16, unit = 32, tags = 64, log = 128, fields = 256
        case heartbeat = 512, origin = 1024, offset = 2048, configStatus = 4096

        /// The key as it appears in a line (for messages).
        var name: String { literal.description }
    }

    var present: UInt16 = 0
    var sequence: UInt64 = 0
    var timestamp: Int64 = 0
    var heartbeat: Int64?
    var source = StringSpan(start: 0, end: 0, hasEscapes: false)
    var metric: StringSpan?
    /// nil with `.value` present means `null`.
    var value: NumberSpan?
    var unit: StringSpan?
    /// Offset of the `{` of `tags`.
    var tags: Int?
    var log: StringSpan?
    /// Offset of the `{` of `fields`.
    var fields: Int?
    var originID: UInt64 = 0
    var originOffset: UInt64 = 0

    /// The origin, when the line names one (`checkShape` ensures both keys or neither).
    var origin: RecordOrigin? { has(.origin) ? RecordOrigin(id: originID, offset: originOffset) : nil }

    func has(_ key: Key) -> Bool { present & key.rawValue != 0 }

    /// Validates the line `scanner` reads and holds what it found.
    init(validating scanner: JSONScanner) throws(WireDecodingError) {
        var scanner = scanner
        scanner.skipWhitespace()
        guard let first = scanner.current else { throw scanner.syntaxError("empty line") }
        guard first == UInt8(ascii: "{") else {
            // Tell a JSON value that is not an object from garbage.
            try scanner.skipValue(depth: 0)
            scanner.skipWhitespace()
            guard scanner.isAtEnd else { throw scanner.unexpected(expecting: "the end of the line") }
            throw JSONScanner.error(WireDecodingError.Code.notAnObject, "the line is not a JSON object", at: 0)
        }
        if scanner.enterContainer(closing: UInt8(ascii: "}")) {
            while true {
                let key: Key?
                let keyOffset = scanner.index
                if let direct = Self.knownKeyDirectly(&scanner) {
                    key = direct
                } else {
                    key = Self.knownKey(try scanner.scanMemberKey().key, scanner)
                }
                if let key {
                    guard !has(key) else {
                        throw JSONScanner.error(
                            WireDecodingError.Code.duplicateKey, "key '\(key.name)' appears more than once", at: keyOffset)
                    }
                    present |= key.rawValue
                    try scanValue(of: key, &scanner)
                } else {
                    try scanner.skipValue(depth: 1)
                }
                if try scanner.separatorFollows(closing: UInt8(ascii: "}")) { continue }
                break
            }
        }
        let end = scanner.index
        scanner.skipWhitespace()
        guard scanner.isAtEnd else { throw scanner.unexpected(expecting: "the end of the line") }
        try checkShape(end: end)
    }

    /// The known key of up to six bytes whose `"key":` stands at `scanner.index`, read with its colon and the white
    /// space after it, as the agent writes every record's keys; nil, with nothing read, for anything else (another
    /// key, escapes, space before the colon, the line's last bytes), which `scanMemberKey` and `knownKey` then read.
    /// One eight-byte load finds the closing quote and compares the key, where the general path scans the string
    /// and compares again (a record line has 7 to 10 keys).
    @inline(__always)
    private static func knownKeyDirectly(_ scanner: inout JSONScanner) -> Key? {
        let start = scanner.index &+ 1
        guard start &+ 8 <= scanner.bytes.count, scanner.bytes[scanner.index] == UInt8(ascii: "\"") else { return nil }
        let word = UInt64(littleEndian: scanner.bytes.loadUnaligned(fromByteOffset: start, as: UInt64.self))
        let length = ByteWord.matches(UInt8(ascii: "\""), in: word).trailingZeroBitCount &>> 3
        guard length >= 2, length <= 6, (word &>> UInt64((length &+ 1) &* 8)) & 0xFF == UInt64(UInt8(ascii: ":")) else {
            return nil
        }
        guard let key = shortKey(word & KeyWords.mask(length), length: length) else { return nil }
        scanner.index = start &+ length &+ 2
        scanner.skipWhitespace()
        return key
    }

    /// The known key of `length` bytes (at most eight) whose bytes, as one little-endian word with the bytes past
    /// `length` cleared, are `word`: one comparison per candidate of that length.
    @inline(__always)
    private static func shortKey(_ word: UInt64, length: Int) -> Key? {
        switch length {
        case 2: return word == KeyWords.ts ? .ts : nil
        case 3: return word == KeyWords.seq ? .seq : word == KeyWords.src ? .src : word == KeyWords.log ? .log : nil
        case 4: return word == KeyWords.unit ? .unit : word == KeyWords.tags ? .tags : nil
        case 5: return word == KeyWords.value ? .value : nil
        case 6:
            if word == KeyWords.metric { return .metric }
            if word == KeyWords.fields { return .fields }
            if word == KeyWords.origin { return .origin }
            return word == KeyWords.offset ? .offset : nil
        default: return nil
        }
    }

    private static func knownKey(_ span: StringSpan, _ scanner: JSONScanner) -> Key? {
        let length = span.end - span.start
        if !span.hasEscapes && length <= 8 && span.start + 8 <= scanner.bytes.count {
            let word = scanner.bytes.loadUnaligned(fromByteOffset: span.start, as: UInt64.self) & KeyWords.mask(length)
            return shortKey(word, length: length)
        }
        if !span.hasEscapes {
            // Without escapes the length decides which keys can match (no allocation, no loop over all keys).
            switch span.end - span.start {
            case 2: return scanner.string(span, equals: "ts") ? .ts : nil
            case 3:
                if scanner.string(span, equals: "seq") { return .seq }
                if scanner.string(span, equals: "src") { return .src }
                if scanner.string(span, equals: "log") { return .log }
                return nil
            case 4:
                if scanner.string(span, equals: "unit") { return .unit }
                if scanner.string(span, equals: "tags") { return .tags }
                return nil
            case 5: return scanner.string(span, equals: "value") ? .value : nil
            case 6:
                if scanner.string(span, equals: "metric") { return .metric }
                if scanner.string(span, equals: "fields") { return .fields }
                if scanner.string(span, equals: "origin") { return .origin }
                if scanner.string(span, equals: "offset") { return .offset }
                return nil
            case 9: return scanner.string(span, equals: "heartbeat") ? .heartbeat : nil
            case 13: return scanner.string(span, equals: "config_status") ? .configStatus : nil
            default: return nil
            }
        }
        var raw = Key.seq.rawValue
        while let key = Key(rawValue: raw) {
            if scanner.string(span, equals: key.literal) { return key }
            raw <<= 1
        }
        return nil
    }

    private mutating func scanValue(of key: Key, _ scanner: inout JSONScanner) throws(WireDecodingError) {
        let offset = scanner.index
        switch key {
        case .seq, .origin, .offset, .ts, .heartbeat:
            // The common form, read in one pass; anything else takes the general path below for its errors.
            if let value = scanner.scanPlainUInt64() {
                switch key {
                case .seq where WireIntegers.sequence.contains(value): sequence = value
                case .origin where WireIntegers.origin.contains(value): originID = value
                case .offset where WireIntegers.offset.contains(value): originOffset = value
                case .ts where value <= UInt64(Int64.max): timestamp = Int64(value)
                case .heartbeat where value <= UInt64(Int64.max): heartbeat = Int64(value)
                default:
                    scanner.index = offset
                    try scanIntegerValue(of: key, &scanner)
                }
            } else {
                try scanIntegerValue(of: key, &scanner)
            }
        case .src:
            source = try LineLayout.string(key, &scanner)
        case .metric:
            metric = try LineLayout.string(key, &scanner)
        case .unit:
            unit = try LineLayout.string(key, &scanner)
        case .log:
            log = try LineLayout.string(key, &scanner)
        case .value:
            switch scanner.current ?? 0 {
            case UInt8(ascii: "n"):
                try scanner.scanLiteral("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                value = try scanner.scanNumber()
            default:
                try LineLayout.wrongType(key, "a number or null", &scanner)
            }
        case .tags:
            tags = try LineLayout.scanStringObject(key, &scanner)
        case .fields:
            fields = try LineLayout.scanStringObject(key, &scanner)
        case .configStatus:
            // Validated here as JSON; `ConfigStatus.parse` reads it.
            try scanner.skipValue(depth: 1)
        }
    }

    /// Reads the integer value of `key` in any valid JSON form, with the precise error for each invalid one.
    private mutating func scanIntegerValue(of key: Key, _ scanner: inout JSONScanner) throws(WireDecodingError) {
        let offset = scanner.index
        switch key {
        case .seq:
            sequence = try LineLayout.unsignedInteger(key, in: WireIntegers.sequence, &scanner)
        case .origin:
            originID = try LineLayout.unsignedInteger(key, in: WireIntegers.origin, &scanner)
        case .offset:
            originOffset = try LineLayout.unsignedInteger(key, in: WireIntegers.offset, &scanner)
        case .ts, .heartbeat:
            let number = try LineLayout.integer(key, &scanner)
            guard let value = scanner.int64(number) else {
                throw JSONScanner.error(
                    WireDecodingError.Code.invalidValue, "'\(key.name)' does not fit in a signed 64-bit integer", at: offset)
            }
            if key == .ts { timestamp = value } else { heartbeat = value }
        default:
            preconditionFailure("'\(key.name)' is not an integer key")
        }
    }

    /// Reads the integer value of `key`, which must lie in `range`, one of `WireIntegers`' ranges (all end at
    /// 2^63-1); a value outside it is `invalid_value`, naming the range.
    private static func unsignedInteger(
        _ key: Key, in range: ClosedRange<UInt64>, _ scanner: inout JSONScanner
    ) throws(WireDecodingError) -> UInt64 {
        let offset = scanner.index
        let number = try integer(key, &scanner)
        guard let value = scanner.uint64(number), range.contains(value) else {
            throw JSONScanner.error(
                WireDecodingError.Code.invalidValue, "'\(key.name)' must be an integer from \(range.lowerBound) to 2^63-1",
                at: offset)
        }
        return value
    }

    private static func integer(_ key: Key, _ scanner: inout JSONScanner) throws(WireDecodingError) -> NumberSpan {
        let offset = scanner.index
        switch scanner.current ?? 0 {
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let number = try scanner.scanNumber()
            guard number.isInteger else {
                throw JSONScanner.error(
                    WireDecodingError.Code.wrongType, "'\(key.name)' must be an integer, without fraction or exponent",
                    at: offset)
            }
            return number
        default:
            try wrongType(key, "an integer", &scanner)
        }
    }

    private static func string(_ key: Key, _ scanner: inout JSONScanner) throws(WireDecodingError) -> StringSpan {
        guard scanner.current == UInt8(ascii: "\"") else { try wrongType(key, "a string", &scanner) }
        return try scanner.scanString()
    }

    /// Throws `wrong_type` for the value at `scanner.index`, or `invalid_json` if it is not a JSON value at all.
    private static func wrongType(_ key: Key, _ expected: String, _ scanner: inout JSONScanner) throws(WireDecodingError) -> Never {
        let offset = scanner.index
        try scanner.skipValue(depth: 1)
        throw JSONScanner.error(WireDecodingError.Code.wrongType, "'\(key.name)' must be \(expected)", at: offset)
    }

    /// Validates an object whose values are all strings and returns the offset of its `{`.
    private static func scanStringObject(_ key: Key, _ scanner: inout JSONScanner) throws(WireDecodingError) -> Int {
        let start = scanner.index
        guard scanner.current == UInt8(ascii: "{") else { try wrongType(key, "an object of strings", &scanner) }
        guard scanner.enterContainer(closing: UInt8(ascii: "}")) else { return start }
        while true {
            let member = try scanner.scanMemberKey().key
            guard scanner.current == UInt8(ascii: "\"") else {
                let offset = scanner.index
                try scanner.skipValue(depth: 2)
                throw JSONScanner.error(
                    WireDecodingError.Code.wrongType,
                    "'\(key.name)' must be an object of strings; the value of '\(scanner.string(member))' is not a string",
                    at: offset)
            }
            _ = try scanner.scanString()
            if try scanner.separatorFollows(closing: UInt8(ascii: "}")) { continue }
            return start
        }
    }

    /// Checks that the keys found make a record or a heartbeat. Inline (its one caller is the initializer), so that
    /// the layout is not copied to be its `self`.
    @inline(__always)
    private func checkShape(end: Int) throws(WireDecodingError) {
        func missing(_ what: String) -> WireDecodingError {
            JSONScanner.error(WireDecodingError.Code.missingKey, what, at: end)
        }
        func conflict(_ what: String) -> WireDecodingError {
            JSONScanner.error(WireDecodingError.Code.conflictingKeys, what, at: end)
        }
        if has(.configStatus) {
            guard present == Key.configStatus.rawValue else {
                throw conflict("a config_status line carries nothing beside 'config_status'")
            }
            return
        }
        let recordKeys: UInt16 = present & ~Key.heartbeat.rawValue
        if has(.heartbeat) {
            guard recordKeys == 0 else {
                var raw = Key.seq.rawValue
                while raw & recordKeys == 0 { raw <<= 1 }
                throw conflict("a heartbeat line cannot carry the record key '\(Key(rawValue: raw)!.name)'")
            }
            return
        }
        guard has(.seq) else { throw missing("missing key 'seq' (or 'heartbeat')") }
        guard has(.ts) else { throw missing("missing key 'ts'") }
        guard has(.src) else { throw missing("missing key 'src'") }
        if has(.metric) {
            if has(.log) { throw conflict("a record cannot carry both 'metric' and 'log'") }
            if has(.fields) { throw conflict("a metric record ('metric') cannot carry the log key 'fields'") }
            guard has(.value) else { throw missing("missing key 'value' of metric record") }
            if has(.origin) || has(.offset) {
                throw conflict("a metric record ('metric') cannot carry the log key '\(has(.origin) ? "origin" : "offset")'")
            }
        } else if has(.log) {
            if has(.origin) != has(.offset) {
                throw missing(has(.origin) ? "missing key 'offset' next to 'origin'" : "missing key 'origin' next to 'offset'")
            }
            let metricKeys = Key.value.rawValue | Key.unit.rawValue | Key.tags.rawValue
            if present & metricKeys != 0 {
                var raw = Key.value.rawValue
                while raw & present & metricKeys == 0 { raw <<= 1 }
                throw conflict("a log record ('log') cannot carry the metric key '\(Key(rawValue: raw)!.name)'")
            }
        } else {
            throw missing("missing key 'metric' or 'log'")
        }
    }
}

/// The known keys of up to eight bytes as little-endian words (first character in the lowest byte), for
/// `LineLayout.shortKey`. Literal constants, so reading them costs no lazy initialisation; every protocol test
/// that decodes a key checks its word.
private enum KeyWords {
    static let ts: UInt64 = 0x73_74  // "ts"
    static let seq: UInt64 = 0x71_65_73  // "seq"
    static let src: UInt64 = 0x63_72_73  // "src"
    static let log: UInt64 = 0x67_6f_6c  // "log"
    static let unit: UInt64 = 0x74_69_6e_75  // "unit"
    static let tags: UInt64 = 0x73_67_61_74  // "tags"
    static let value: UInt64 = 0x65_75_6c_61_76  // "value"
    static let metric: UInt64 = 0x63_69_72_74_65_6d  // "metric"
    static let fields: UInt64 = 0x73_64_6c_65_69_66  // "fields"
    static let origin: UInt64 = 0x6e_69_67_69_72_6f  // "origin"
    static let offset: UInt64 = 0x74_65_73_66_66_6f  // "offset"

    /// Keeps the low `length` bytes of a word.
    @inline(__always)
    static func mask(_ length: Int) -> UInt64 {
        length >= 8 ? .max : (1 << (UInt64(length) * 8)) - 1
    }
}

extension LineLayout.Key {
    var literal: StaticString {
        switch self {
        case .seq: "seq"
        case .ts: "ts"
        case .src: "src"
        case .metric: "metric"
        case .value: "value"
        case .unit: "unit"
        case .tags: "tags"
        case .log: "log"
        case .fields: "fields"
        case .heartbeat: "heartbeat"
        case .origin: "origin"
        case .offset: "offset"
        case .configStatus: "config_status"
        }
    }
}
