extension UptimeSource {
    /// Parses `/proc/uptime` (`12345.67 54321.00`: seconds since boot, then idle seconds summed over CPUs) and
    /// returns the first number, or `nil` (one malformed line) when it is not a non-negative decimal number.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        var firstLine: Range<Int>?
        ByteParsing.forEachLine(in: bytes) { line in
            if firstLine == nil { firstLine = line }
        }
        guard let line = firstLine else { return nil }
        var fields = FieldScanner(bytes, line: line)
        guard let field = fields.next(), let value = ByteParsing.parseDouble(bytes, field), value >= 0 else {
            return nil
        }
        return value
    }

    static func parse(_ bytes: [UInt8]) -> Double? {
        bytes.withUnsafeBufferPointer { parse($0) }
    }
}
