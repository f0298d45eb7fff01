import UplinkCore

/// Allocation-free helpers for parsing the line-oriented text of procfs and sysfs files.
///
/// Everything works on byte ranges of one `UnsafeBufferPointer<UInt8>` and never traps on malformed input:
/// functions that cannot make sense of their input return `nil`.
enum ByteParsing {
    /// Calls `body` with the range of every line in `bytes`, without its `\n` (or `\r\n`) terminator.
    /// A last line without a terminator is included; empty lines are included too (as empty ranges).
    static func forEachLine(
        in bytes: UnsafeBufferPointer<UInt8>, _ body: (Range<Int>) throws -> Void
    ) rethrows {
        let raw = UnsafeRawBufferPointer(bytes)
        let unfinished = try NewlineScan.forEachLine(in: raw) { text, _ in try body(text) }
        if unfinished < bytes.count {
            try body(unfinished..<bytes.count)
        }
    }

    /// The first `count` fields of the first line of `bytes` as non-negative decimal numbers (`/proc/loadavg`,
    /// `/proc/uptime`), or `nil` when the line has fewer fields or one of them is not such a number. The fields after
    /// them are ignored.
    static func leadingNonNegativeNumbers(_ count: Int, in bytes: UnsafeBufferPointer<UInt8>) -> [Double]? {
        var firstLine: Range<Int>?
        forEachLine(in: bytes) { line in
            if firstLine == nil { firstLine = line }
        }
        guard let line = firstLine else { return nil }
        var fields = FieldScanner(bytes, line: line)
        var values: [Double] = []
        values.reserveCapacity(count)
        for _ in 0..<count {
            guard let field = fields.next(), let value = parseDouble(bytes, field), value >= 0 else { return nil }
            values.append(value)
        }
        return values
    }

    /// Whether `byte` separates fields: space, tab, carriage return, vertical tab or form feed.
    @inline(__always)
    static func isBlank(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == 0x0B
            || byte == 0x0C
    }

    /// Parses an unsigned decimal integer filling all of `range`. Returns `nil` for an empty range, any
    /// non-digit byte, or a value that does not fit in `UInt64`.
    static func parseUInt64(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> UInt64? {
        guard !range.isEmpty, range.lowerBound >= 0, range.upperBound <= bytes.count else { return nil }
        return ASCIIDecimal.value(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[range])))
    }

    /// Whether the bytes in `range` are exactly `literal` (compared byte by byte, ASCII).
    static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ literal: StaticString) -> Bool {
        guard literal.utf8CodeUnitCount == range.count else { return false }
        return hasPrefix(bytes, range, literal)
    }

    /// Whether the bytes in `range` start with `literal`.
    static func hasPrefix(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>, _ literal: StaticString) -> Bool {
        let length = literal.utf8CodeUnitCount
        guard length <= range.count, range.upperBound <= bytes.count else { return false }
        let literalBytes = literal.utf8Start
        for offset in 0..<length where bytes[range.lowerBound + offset] != literalBytes[offset] {
            return false
        }
        return true
    }

    /// Whether `byte` is an ASCII decimal digit.
    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// Whether the bytes in `range` form an identifier as procfs uses them for keys: an ASCII letter or `_`
    /// followed by letters, digits, `_`, `(` or `)` (meminfo has keys like `Active(anon)`).
    static func isKey(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Bool {
        guard !range.isEmpty else { return false }
        for index in range {
            let byte = bytes[index]
            let isLetter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
            let isDigit = Self.isDigit(byte)
            let isPunctuation = byte == UInt8(ascii: "_") || byte == UInt8(ascii: "(") || byte == UInt8(ascii: ")")
            if index == range.lowerBound {
                guard isLetter || byte == UInt8(ascii: "_") else { return false }
            } else {
                guard isLetter || isDigit || isPunctuation else { return false }
            }
        }
        return true
    }
}

/// Walks the blank-separated fields of one line.
struct FieldScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    private var position: Int
    private let end: Int

    /// - Parameters:
    ///   - bytes: The whole buffer.
    ///   - line: The line's range inside `bytes`.
    init(_ bytes: UnsafeBufferPointer<UInt8>, line: Range<Int>) {
        self.bytes = bytes
        self.position = line.lowerBound
        self.end = min(line.upperBound, bytes.count)
    }

    /// The range of the next field, or `nil` at the end of the line.
    mutating func next() -> Range<Int>? {
        while position < end, ByteParsing.isBlank(bytes[position]) {
            position += 1
        }
        guard position < end else { return nil }
        let start = position
        while position < end, !ByteParsing.isBlank(bytes[position]) {
            position += 1
        }
        return start..<position
    }

    /// Whether only blanks remain on the line.
    mutating func isAtEnd() -> Bool {
        while position < end, ByteParsing.isBlank(bytes[position]) {
            position += 1
        }
        return position >= end
    }
}
