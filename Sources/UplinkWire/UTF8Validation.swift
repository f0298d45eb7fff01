/// UTF-8 well-formedness per the Unicode Standard, Table 3-7.
enum UTF8Validation {
    /// Examines the sequence that starts at `bytes[index]`, whose lead byte is ≥ 0x80.
    ///
    /// Returns `(length, true)` for a well-formed sequence of `length` bytes, or `(length, false)` for an
    /// ill-formed one, where `length` is the maximal subpart to replace with a single U+FFFD (at least 1), as
    /// the standard recommends.
    @inline(__always)
    static func sequence(in bytes: UnsafeRawBufferPointer, at index: Int) -> (length: Int, valid: Bool) {
        let lead = bytes[index]
        let expected: Int
        var low: UInt8 = 0x80
        var high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: expected = 2
        case 0xE0: expected = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: expected = 3
        case 0xED: expected = 3; high = 0x9F
        case 0xF0: expected = 4; low = 0x90
        case 0xF1...0xF3: expected = 4
        case 0xF4: expected = 4; high = 0x8F
        default: return (1, false)
        }
        var length = 1
        while length < expected {
            let position = index + length
            guard position < bytes.count else { return (length, false) }
            let byte = bytes[position]
            guard byte >= low && byte <= high else { return (length, false) }
            low = 0x80
            high = 0xBF
            length += 1
        }
        return (length, true)
    }
}
