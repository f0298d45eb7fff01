import CJSONBytes
import UplinkCore

/// Where a JSON string's content lies in a line: the bytes between its quotes, still escaped.
struct StringSpan: Sendable, Equatable {
    /// Offset of the first content byte (just after the opening quote).
    var start: Int
    /// Offset of the closing quote.
    var end: Int
    /// Whether the content contains backslash escapes (and must be unescaped to be read).
    var hasEscapes: Bool
}

/// Where a JSON number lies in a line.
struct NumberSpan: Sendable, Equatable {
    var start: Int
    var end: Int
    /// No fraction and no exponent.
    var isInteger: Bool
}

/// A byte-level, validating JSON tokenizer over one line (RFC 8259), used by `WireLineParser`.
///
/// It never allocates on well-formed input: strings and numbers are reported as spans of the line; errors carry
/// the byte offset at which they were found. Strings are checked completely: escapes (including `\uXXXX`
/// surrogate pairs), no raw control characters, well-formed UTF-8.
struct JSONScanner {
    let bytes: UnsafeRawBufferPointer
    /// Offset of the next byte to read.
    var index: Int = 0
    /// Deepest nesting of arrays and objects accepted; the line's top-level object is depth 1.
    let maximumDepth: Int

    init(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    // MARK: - Errors

    static func error(_ code: String, _ message: String, at offset: Int) -> WireDecodingError {
        WireDecodingError(code: code, message: message, offset: offset)
    }

    func syntaxError(_ message: String, at offset: Int? = nil) -> WireDecodingError {
        JSONScanner.error(WireDecodingError.Code.invalidJSON, message, at: offset ?? index)
    }

    func unexpected(expecting what: String) -> WireDecodingError {
        guard index < bytes.count else { return syntaxError("unexpected end of line, expected \(what)") }
        return syntaxError("unexpected \(JSONScanner.describe(byte: bytes[index])), expected \(what)")
    }

    static func describe(byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + hex(byte)
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]], as: UTF8.self)
    }

    // MARK: - Tokens

    /// The byte at `index`, or nil at the end of the line.
    @inline(__always)
    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    @inline(__always)
    var isAtEnd: Bool { index >= bytes.count }

    /// Skips JSON whitespace (space, tab, CR, LF).
    @inline(__always)
    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"): index += 1
            default: return
            }
        }
    }

    /// Consumes `byte` or throws `invalid_json` naming what was expected.
    @inline(__always)
    mutating func expect(_ byte: UInt8, _ what: String) throws(WireDecodingError) {
        guard index < bytes.count, bytes[index] == byte else { throw unexpected(expecting: what) }
        index += 1
    }

    /// Steps past the `{` or `[` at `index` and the white space after it. When `closing` (`}` or `]`) comes next, the
    /// object or array is empty: that is consumed too and the result is false; true when a member or element follows.
    @inline(__always)
    mutating func enterContainer(closing: UInt8) -> Bool {
        index += 1
        skipWhitespace()
        guard current == closing else { return true }
        index += 1
        return false
    }

    /// Reads an object member's key string and the `:` after it (with the white space around it), leaving `index` at
    /// the value; returns the key and the offset of its opening quote.
    @inline(__always)
    mutating func scanMemberKey() throws(WireDecodingError) -> (key: StringSpan, offset: Int) {
        guard current == UInt8(ascii: "\"") else { throw unexpected(expecting: "a key string") }
        let offset = index
        let key = try scanString()
        skipWhitespace()
        try expect(UInt8(ascii: ":"), "':'")
        skipWhitespace()
        return (key, offset)
    }

    /// After a member of an object or an element of an array: true when a `,` follows (it and the white space after
    /// it are consumed: another one comes), false when `closing` (`}` or `]`) does (consumed); anything else throws.
    @inline(__always)
    mutating func separatorFollows(closing: UInt8) throws(WireDecodingError) -> Bool {
        skipWhitespace()
        if current == UInt8(ascii: ",") {
            index += 1
            skipWhitespace()
            return true
        }
        try expect(closing, closing == UInt8(ascii: "}") ? "',' or '}'" : "',' or ']'")
        return false
    }

    /// Reads a string; `index` must be at its opening quote. Leaves `index` after the closing quote.
    @inline(__always)
    mutating func scanString() throws(WireDecodingError) -> StringSpan {
        let start = index &+ 1
        var plainEnd = start
        // Most strings on the wire hold only plain bytes up to their closing quote. Inline, so that a key or a short
        // value costs no call (8 to 12 strings a record line); anything else continues in `scanString(opening:from:)`
        // where the plain bytes end.
        if start < bytes.count, let base = bytes.baseAddress {
            plainEnd = start &+ uplink_json_plain_prefix(base + start, bytes.count &- start)
            if plainEnd < bytes.count && bytes[plainEnd] == UInt8(ascii: "\"") {
                index = plainEnd &+ 1
                return StringSpan(start: start, end: plainEnd, hasEscapes: false)
            }
        }
        return try scanString(opening: index, from: plainEnd)
    }

    /// `scanString()` for a string with escapes, non-ASCII bytes or an error, from `resume`, where its first byte
    /// that is not plain stands (or the end of the line).
    private mutating func scanString(opening: Int, from resume: Int) throws(WireDecodingError) -> StringSpan {
        index = resume
        let start = opening + 1
        var hasEscapes = false
        let count = bytes.count
        while true {
            // Straight to the first byte that is not plain (a quote, a backslash, a control character or non-ASCII).
            if index < count, let base = bytes.baseAddress {
                index &+= uplink_json_plain_prefix(base + index, count &- index)
            }
            guard index < count else {
                throw syntaxError("unterminated string", at: opening)
            }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return StringSpan(start: start, end: index - 1, hasEscapes: hasEscapes)
            case UInt8(ascii: "\\"):
                hasEscapes = true
                try scanEscape()
            case 0..<0x20:
                throw syntaxError("raw control character \(JSONScanner.describe(byte: byte)) in a string")
            case 0x80...:
                let (length, valid) = UTF8Validation.sequence(in: bytes, at: index)
                guard valid else {
                    throw JSONScanner.error(WireDecodingError.Code.invalidUTF8, "ill-formed UTF-8 in a string", at: index)
                }
                index += length
            default:
                index += 1
            }
        }
    }

    /// Validates one escape sequence; `index` is at the backslash.
    private mutating func scanEscape() throws(WireDecodingError) {
        let backslash = index
        guard index + 1 < bytes.count else { throw syntaxError("unterminated escape sequence") }
        switch bytes[index + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
            UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            index += 2
        case UInt8(ascii: "u"):
            let unit = try readHexEscape()
            switch unit {
            case 0xD800...0xDBFF:
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw syntaxError("high surrogate \\u\(JSONScanner.hex4(unit)) not followed by a low surrogate", at: backslash) }
                let low = try readHexEscape()
                guard (0xDC00...0xDFFF).contains(low) else {
                    throw syntaxError("high surrogate \\u\(JSONScanner.hex4(unit)) not followed by a low surrogate", at: backslash)
                }
            case 0xDC00...0xDFFF:
                throw syntaxError("unpaired low surrogate \\u\(JSONScanner.hex4(unit))", at: backslash)
            default:
                break
            }
        default:
            throw syntaxError("invalid escape sequence \\\(JSONScanner.describe(byte: bytes[index + 1]))")
        }
    }

    static func hex4(_ unit: UInt16) -> String {
        hex(UInt8(truncatingIfNeeded: unit >> 8)) + hex(UInt8(truncatingIfNeeded: unit))
    }

    /// Reads `\uXXXX` at `index` and returns the code unit.
    private mutating func readHexEscape() throws(WireDecodingError) -> UInt16 {
        let start = index
        guard index + 6 <= bytes.count else { throw syntaxError("truncated \\u escape", at: start) }
        var unit: UInt16 = 0
        for offset in 2..<6 {
            guard let digit = ASCIIHexadecimal.digit(bytes[index + offset]) else {
                throw syntaxError("invalid hex digit in \\u escape", at: index + offset)
            }
            unit = unit << 4 | UInt16(digit)
        }
        index += 6
        return unit
    }

    /// Reads a number per the JSON grammar; `index` must be at its first byte (`-` or a digit).
    mutating func scanNumber() throws(WireDecodingError) -> NumberSpan {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        guard let first = current, JSONScanner.isDigit(first) else { throw unexpected(expecting: "a digit") }
        index += 1
        if first != UInt8(ascii: "0") {
            skipDigits()
        } else if let next = current, JSONScanner.isDigit(next) {
            throw syntaxError("a number cannot have a leading zero")
        }
        var isInteger = true
        if current == UInt8(ascii: ".") {
            index += 1
            guard let digit = current, JSONScanner.isDigit(digit) else { throw unexpected(expecting: "a digit after '.'") }
            skipDigits()
            isInteger = false
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard let digit = current, JSONScanner.isDigit(digit) else { throw unexpected(expecting: "a digit in the exponent") }
            skipDigits()
            isInteger = false
        }
        return NumberSpan(start: start, end: index, isInteger: isInteger)
    }

    /// Reads a plain non-negative integer (digits only, no leading zero, no fraction or exponent) that fits in a
    /// `UInt64`, leaving `index` after it. Returns nil and leaves `index` where it was for anything else, so the
    /// caller can fall back to `scanNumber` and its precise errors.
    @inline(__always)
    mutating func scanPlainUInt64() -> UInt64? {
        let start = index
        let (leading, digits) = ASCIIDecimal.leading(UnsafeRawBufferPointer(rebasing: bytes[start...]))
        guard let value = leading else { return nil }
        index = start &+ digits
        let plain =
            digits > 0 && (digits == 1 || bytes[start] != UInt8(ascii: "0"))
            && (index == bytes.count
                || (bytes[index] != UInt8(ascii: ".") && bytes[index] | 0x20 != UInt8(ascii: "e")))
        guard plain else {
            index = start
            return nil
        }
        return value
    }

    @inline(__always)
    static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    @inline(__always)
    private mutating func skipDigits() {
        while index < bytes.count, JSONScanner.isDigit(bytes[index]) { index += 1 }
    }

    /// Consumes `literal` (`true`, `false`, `null`) or throws.
    mutating func scanLiteral(_ literal: StaticString) throws(WireDecodingError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw syntaxError("invalid literal") }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] {
            throw syntaxError("invalid literal", at: index + offset)
        }
        index += count
    }

    /// Skips any JSON value, validating it. `depth` is the nesting depth of the container holding the value.
    mutating func skipValue(depth: Int) throws(WireDecodingError) {
        guard let byte = current else { throw unexpected(expecting: "a value") }
        switch byte {
        case UInt8(ascii: "\""):
            _ = try scanString()
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            _ = try scanNumber()
        case UInt8(ascii: "t"):
            try scanLiteral("true")
        case UInt8(ascii: "f"):
            try scanLiteral("false")
        case UInt8(ascii: "n"):
            try scanLiteral("null")
        case UInt8(ascii: "{"):
            try checkDepth(depth + 1)
            guard enterContainer(closing: UInt8(ascii: "}")) else { return }
            while true {
                _ = try scanMemberKey()
                try skipValue(depth: depth + 1)
                if try separatorFollows(closing: UInt8(ascii: "}")) { continue }
                return
            }
        case UInt8(ascii: "["):
            try checkDepth(depth + 1)
            guard enterContainer(closing: UInt8(ascii: "]")) else { return }
            while true {
                try skipValue(depth: depth + 1)
                if try separatorFollows(closing: UInt8(ascii: "]")) { continue }
                return
            }
        default:
            throw unexpected(expecting: "a value")
        }
    }

    private func checkDepth(_ depth: Int) throws(WireDecodingError) {
        guard depth <= maximumDepth else {
            throw JSONScanner.error(
                WireDecodingError.Code.tooDeep, "arrays and objects nested deeper than \(maximumDepth) levels", at: index)
        }
    }

    // MARK: - Reading spans

    /// Whether the string at `span` equals `literal` once unescaped.
    func string(_ span: StringSpan, equals literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        if !span.hasEscapes {
            guard span.end - span.start == count else { return false }
            for offset in 0..<count where bytes[span.start + offset] != literal.utf8Start[offset] { return false }
            return true
        }
        var iterator = UnescapingIterator(bytes: bytes, span: span)
        for offset in 0..<count {
            guard let byte = iterator.next(), byte == literal.utf8Start[offset] else { return false }
        }
        return iterator.next() == nil
    }

    /// The unescaped string at `span` (valid JSON already checked by `scanString`).
    func string(_ span: StringSpan) -> String {
        let raw = UnsafeRawBufferPointer(rebasing: bytes[span.start..<span.end])
        if !span.hasEscapes { return String(decoding: raw, as: UTF8.self) }
        // Unescaping never makes a string longer: each escape is at least as long as the bytes it stands for.
        return String(unsafeUninitializedCapacity: raw.count) { buffer in
            var iterator = UnescapingIterator(bytes: bytes, span: span)
            var count = 0
            while let byte = iterator.next() {
                buffer[count] = byte
                count += 1
            }
            return count
        }
    }

    /// Reads a span that `scanNumber` reported as an integer as an `Int64`, or nil when out of range.
    func int64(_ span: NumberSpan) -> Int64? {
        var position = span.start
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        guard let magnitude = ASCIIDecimal.value(UnsafeRawBufferPointer(rebasing: bytes[position..<span.end])) else { return nil }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return Int64(truncatingIfNeeded: 0 &- magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { return nil }
        return Int64(magnitude)
    }

    /// Reads a span that `scanNumber` reported as an integer as a `UInt64`, or nil when negative or out of range.
    func uint64(_ span: NumberSpan) -> UInt64? {
        guard bytes[span.start] != UInt8(ascii: "-") else {
            // "-0" is zero; every other negative integer is out of range.
            return span.end - span.start == 2 && bytes[span.start + 1] == UInt8(ascii: "0") ? 0 : nil
        }
        return ASCIIDecimal.value(UnsafeRawBufferPointer(rebasing: bytes[span.start..<span.end]))
    }

    /// Reads a number span as the nearest `Double` (±infinity beyond the range of `Double`).
    func double(_ span: NumberSpan) -> Double {
        let negative = bytes[span.start] == UInt8(ascii: "-")
        // Integers up to 15 digits are exact in a Double and need no text conversion.
        if span.isInteger && span.end - span.start - (negative ? 1 : 0) <= 15, let integer = int64(span) {
            return integer == 0 && negative ? -0.0 : Double(integer)
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[span.start..<span.end]), as: UTF8.self)
        return Double(text) ?? (negative ? -.infinity : .infinity)
    }
}

/// Yields the UTF-8 bytes of a validated JSON string's content, resolving escapes.
struct UnescapingIterator: IteratorProtocol {
    let bytes: UnsafeRawBufferPointer
    var index: Int
    let end: Int
    /// Bytes of a decoded `\u` escape still to yield, least significant first.
    private var pending: UInt32 = 0
    private var pendingCount = 0

    init(bytes: UnsafeRawBufferPointer, span: StringSpan) {
        self.bytes = bytes
        self.index = span.start
        self.end = span.end
    }

    mutating func next() -> UInt8? {
        if pendingCount > 0 {
            let byte = UInt8(truncatingIfNeeded: pending)
            pending >>= 8
            pendingCount -= 1
            return byte
        }
        guard index < end else { return nil }
        let byte = bytes[index]
        guard byte == UInt8(ascii: "\\") else {
            index += 1
            return byte
        }
        let escaped = bytes[index + 1]
        index += 2
        switch escaped {
        case UInt8(ascii: "b"): return 0x08
        case UInt8(ascii: "f"): return 0x0C
        case UInt8(ascii: "n"): return 0x0A
        case UInt8(ascii: "r"): return 0x0D
        case UInt8(ascii: "t"): return 0x09
        case UInt8(ascii: "u"): break
        default: return escaped  // '"', '\\', '/'
        }
        var scalar = UInt32(readHex())
        if (0xD800...0xDBFF).contains(scalar) {
            index += 2  // the second "\u"
            let low = UInt32(readHex())
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        }
        // Encode as UTF-8; queue all but the first byte (least significant byte first).
        switch scalar {
        case 0..<0x80:
            return UInt8(scalar)
        case 0x80..<0x800:
            pending = 0x80 | (scalar & 0x3F)
            pendingCount = 1
            return UInt8(0xC0 | (scalar >> 6))
        case 0x800..<0x10000:
            pending = (0x80 | ((scalar >> 6) & 0x3F)) | (0x80 | (scalar & 0x3F)) << 8
            pendingCount = 2
            return UInt8(0xE0 | (scalar >> 12))
        default:
            pending = (0x80 | ((scalar >> 12) & 0x3F)) | (0x80 | ((scalar >> 6) & 0x3F)) << 8 | (0x80 | (scalar & 0x3F)) << 16
            pendingCount = 3
            return UInt8(0xF0 | (scalar >> 18))
        }
    }

    private mutating func readHex() -> UInt16 {
        var unit: UInt16 = 0
        for offset in 0..<4 { unit = unit << 4 | UInt16(ASCIIHexadecimal.digit(bytes[index + offset]) ?? 0) }
        index += 4
        return unit
    }
}
