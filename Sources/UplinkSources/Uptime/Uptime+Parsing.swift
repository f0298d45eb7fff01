extension UptimeSource {
    /// Parses `/proc/uptime` (`12345.67 54321.00`: seconds since boot, then idle seconds summed over CPUs) and
    /// returns the first number, or `nil` (one malformed line) when it is not a non-negative decimal number.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Double? {
        ByteParsing.leadingNonNegativeNumbers(1, in: bytes)?[0]
    }

    static func parse(_ bytes: [UInt8]) -> Double? {
        bytes.withUnsafeBufferPointer { parse($0) }
    }
}
