import CJSONBytes
import UplinkCore

/// Byte-level JSON output: strings escaped and repaired, integers and doubles written without `JSONEncoder`
/// or intermediate `String`s where avoidable.
///
/// Everything is written by `JSONRawWriter` into memory reserved up front from the `maximum…` bounds below; the
/// `append…(to: inout [UInt8])` functions wrap it for callers that build arrays.
enum JSONWriting {
    /// Most bytes a quoted JSON string of `count` input bytes can take: every byte may become `\u00XX`.
    /// (Ill-formed UTF-8 takes at most 3 bytes, U+FFFD, per input byte.)
    @inline(__always)
    static func maximumStringBytes(_ count: Int) -> Int { 6 &* count &+ 2 }

    /// Most bytes `JSONRawWriter.integer` writes: 20 digits and a sign.
    static let maximumIntegerBytes = 21

    /// Most bytes `JSONRawWriter.number` writes (Swift's shortest round-trip form is at most 24 characters).
    static let maximumNumberBytes = 32

    /// Most bytes `JSONRawWriter.object` writes for `tags`.
    static func maximumObjectBytes(_ tags: [Tag]) -> Int {
        var bytes = 2
        for tag in tags {
            bytes += maximumStringBytes(tag.key.utf8.count) + maximumStringBytes(tag.value.utf8.count) + 2
        }
        return bytes
    }

    /// Appends `string` as a quoted JSON string.
    static func appendString(_ string: String, to output: inout [UInt8]) {
        output.appendJSON(maximumBytes: maximumStringBytes(string.utf8.count)) { $0.string(string) }
    }

    /// Appends arbitrary bytes as a quoted JSON string: quotes, backslashes and control characters escaped,
    /// ill-formed UTF-8 replaced by U+FFFD, so the result is always valid JSON.
    static func appendString(bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        output.appendJSON(maximumBytes: maximumStringBytes(bytes.count)) { $0.string(bytes: bytes) }
    }

    /// Appends a signed integer in decimal.
    static func appendInteger(_ value: Int64, to output: inout [UInt8]) {
        output.appendJSON(maximumBytes: maximumIntegerBytes) { $0.integer(value) }
    }

    /// Appends an unsigned integer in decimal.
    static func appendInteger(_ value: UInt64, to output: inout [UInt8]) {
        output.appendJSON(maximumBytes: maximumIntegerBytes) { $0.decimal(value) }
    }

    /// Appends a number; see `JSONRawWriter.number`.
    static func appendNumber(_ value: Double, to output: inout [UInt8]) {
        output.appendJSON(maximumBytes: maximumNumberBytes) { $0.number(value) }
    }

    /// Appends `{"key":"value",...}` for the tags.
    static func appendObject(_ tags: [Tag], to output: inout [UInt8]) {
        output.appendJSON(maximumBytes: maximumObjectBytes(tags)) { $0.object(tags) }
    }

    /// Writes the decimal digits of `value` at `destination`, which has room for 20 bytes; returns how many.
    @inline(__always)
    static func writeDecimal(_ value: UInt64, to destination: UnsafeMutableRawPointer) -> Int {
        let count = decimalDigitCount(value)
        writeDigits(value, count: count, endingAt: destination.assumingMemoryBound(to: UInt8.self) + count)
        return count
    }

    /// The number of decimal digits of `value` (1 for 0).
    @inline(__always)
    static func decimalDigitCount(_ value: UInt64) -> Int {
        // log10 estimated from the bit length (1233/4096 ≈ log10(2)), then corrected by one comparison.
        let nonzero = value | 1  // the same count, except for 0, which has one digit
        let bits = 64 &- nonzero.leadingZeroBitCount
        let estimate = (bits &* 1233) &>> 12
        return estimate &+ (nonzero >= powerOfTen(estimate) ? 1 : 0)
    }

    /// 10^exponent for exponent in 0...19 (a switch, which the optimizer turns into a table of constants).
    @inline(__always)
    private static func powerOfTen(_ exponent: Int) -> UInt64 {
        switch exponent {
        case 0: 1
        case 1: 10
        case 2: 100
        case 3: 1_000
        case 4: 10_000
        case 5: 100_000
        case 6: 1_000_000
        case 7: 10_000_000
        case 8: 100_000_000
        case 9: 1_000_000_000
        case 10: 10_000_000_000
        case 11: 100_000_000_000
        case 12: 1_000_000_000_000
        case 13: 10_000_000_000_000
        case 14: 100_000_000_000_000
        case 15: 1_000_000_000_000_000
        case 16: 10_000_000_000_000_000
        case 17: 100_000_000_000_000_000
        case 18: 1_000_000_000_000_000_000
        default: 10_000_000_000_000_000_000
        }
    }

    /// "00" "01" … "99": two digits per division by 100.
    private static let digitPairs: StaticString = """
        00010203040506070809101112131415161718192021222324252627282930313233343536373839\
        40414243444546474849505152535455565758596061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899
        """

    /// Writes the `count` low decimal digits of `value` in the `count` bytes before `end`.
    @inline(__always)
    private static func writeDigits(_ value: UInt64, count: Int, endingAt end: UnsafeMutablePointer<UInt8>) {
        let pairs = UnsafeRawPointer(digitPairs.utf8Start)
        var value = value
        var position = end
        var remaining = count
        while remaining >= 2 {
            let (quotient, pair) = value.quotientAndRemainder(dividingBy: 100)
            position -= 2
            UnsafeMutableRawPointer(position).storeBytes(
                of: pairs.loadUnaligned(fromByteOffset: Int(pair) &* 2, as: UInt16.self), as: UInt16.self)
            value = quotient
            remaining &-= 2
        }
        if remaining == 1 {
            (position - 1).pointee = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value)
        }
    }
}

/// Writes JSON text at a pointer, with no capacity checks: the caller reserved room for the worst case using the
/// `JSONWriting.maximum…Bytes` bounds (each function below says which).
struct JSONRawWriter {
    private(set) var position: UnsafeMutablePointer<UInt8>

    @inline(__always)
    init(_ start: UnsafeMutablePointer<UInt8>) {
        position = start
    }

    @inline(__always)
    init(_ start: UnsafeMutableRawPointer) {
        position = start.assumingMemoryBound(to: UInt8.self)
    }

    /// One byte.
    @inline(__always)
    mutating func byte(_ value: UInt8) {
        position.pointee = value
        position += 1
    }

    /// Raw bytes, as they are.
    @inline(__always)
    mutating func bytes(_ bytes: UnsafeRawBufferPointer) {
        guard let start = bytes.baseAddress else { return }
        UnsafeMutableRawPointer(position).copyMemory(from: start, byteCount: bytes.count)
        position += bytes.count
    }

    /// An ASCII literal, as it is.
    @inline(__always)
    mutating func literal(_ text: StaticString) {
        bytes(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// An unsigned integer in decimal; at most `maximumIntegerBytes`.
    @inline(__always)
    mutating func decimal(_ value: UInt64) {
        position += JSONWriting.writeDecimal(value, to: position)
    }

    /// A signed integer in decimal; at most `maximumIntegerBytes`.
    @inline(__always)
    mutating func integer(_ value: Int64) {
        if value < 0 {
            byte(UInt8(ascii: "-"))
            decimal(UInt64(bitPattern: 0 &- value))  // magnitude, also right for Int64.min
        } else {
            decimal(UInt64(value))
        }
    }

    /// A number; integral values below 2^53 are written without a fraction, non-finite ones as `null`.
    /// At most `maximumNumberBytes`.
    mutating func number(_ value: Double) {
        guard value.isFinite else {
            literal("null")
            return
        }
        if value == value.rounded(.towardZero) && abs(value) < 9_007_199_254_740_992 {
            if value == 0 && value.sign == .minus {
                byte(UInt8(ascii: "0"))
            } else {
                integer(Int64(value))
            }
            return
        }
        // Swift prints the shortest representation that reads back exactly, e.g. "0.1", "1e-07", "1.5e+300",
        // all of which are valid JSON numbers.
        var text = value.description
        text.withUTF8 { bytes(UnsafeRawBufferPointer($0)) }
    }

    /// `string` quoted; at most `maximumStringBytes(string.utf8.count)`.
    @inline(__always)
    mutating func string(_ string: String) {
        var string = string
        string.withUTF8 { self.string(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// `{"key":"value",...}`; at most `maximumObjectBytes(tags)`.
    mutating func object(_ tags: [Tag]) {
        byte(UInt8(ascii: "{"))
        members(tags, first: true)
        byte(UInt8(ascii: "}"))
    }

    /// `"key":"value"` for each tag, separated by commas, with a comma first unless `first`.
    mutating func members(_ tags: [Tag], first: Bool) {
        var first = first
        for tag in tags {
            member(key: tag.key, value: tag.value, first: first)
            first = false
        }
    }

    /// `"key":"value"`, with a comma in front unless `first`.
    @inline(__always)
    mutating func member(key: String, value: String, first: Bool) {
        if !first { byte(UInt8(ascii: ",")) }
        string(key)
        byte(UInt8(ascii: ":"))
        string(value)
    }

    /// Arbitrary bytes as a quoted JSON string: quotes, backslashes and control characters escaped, ill-formed
    /// UTF-8 replaced by U+FFFD, so the result is always valid JSON. At most `maximumStringBytes(bytes.count)`.
    mutating func string(bytes: UnsafeRawBufferPointer) {
        byte(UInt8(ascii: "\""))
        let count = bytes.count
        guard count > 0, let source = bytes.baseAddress else {
            byte(UInt8(ascii: "\""))
            return
        }
        var index = 0
        while index < count {
            // The plain bytes up to the next one that needs work, copied as they are checked: the copy may write
            // past them, but the room reserved for the worst case (6 bytes out per byte in) covers every byte left,
            // and what follows the plain ones is overwritten.
            let plain = uplink_json_copy_plain_prefix(position, source + index, count &- index)
            index &+= plain
            position += plain
            guard index < count else { break }
            let value = source.load(fromByteOffset: index, as: UInt8.self)
            if value >= 0x20 && value < 0x80 && value != UInt8(ascii: "\"") && value != UInt8(ascii: "\\") {
                byte(value)
                index &+= 1
                continue
            }
            if value >= 0x80 {
                let (length, valid) = UTF8Validation.sequence(in: bytes, at: index)
                if valid {
                    for offset in 0..<length {
                        position[offset] = source.load(fromByteOffset: index &+ offset, as: UInt8.self)
                    }
                    position += length
                } else {
                    byte(0xEF)
                    byte(0xBF)
                    byte(0xBD)
                }
                index &+= length
                continue
            }
            escape(value)
            index &+= 1
        }
        byte(UInt8(ascii: "\""))
    }

    /// The escape sequence of a quote, a backslash or a control character.
    @inline(__always)
    private mutating func escape(_ value: UInt8) {
        byte(UInt8(ascii: "\\"))
        switch value {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): byte(value)
        case UInt8(ascii: "\n"): byte(UInt8(ascii: "n"))
        case UInt8(ascii: "\r"): byte(UInt8(ascii: "r"))
        case UInt8(ascii: "\t"): byte(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789abcdef"
            byte(UInt8(ascii: "u"))
            byte(UInt8(ascii: "0"))
            byte(UInt8(ascii: "0"))
            byte(hex.utf8Start[Int(value &>> 4)])
            byte(hex.utf8Start[Int(value & 0x0F)])
        }
    }
}

extension Array where Element == UInt8 {
    /// Appends what `body` writes, given room for `maximumBytes`.
    @inline(__always)
    mutating func appendJSON(maximumBytes: Int, _ body: (inout JSONRawWriter) -> Void) {
        let start = count
        append(contentsOf: repeatElement(0, count: maximumBytes))
        let written = withUnsafeMutableBufferPointer { buffer in
            var writer = JSONRawWriter(buffer.baseAddress! + start)
            body(&writer)
            return writer.position - (buffer.baseAddress! + start)
        }
        removeLast(maximumBytes - written)
    }
}
