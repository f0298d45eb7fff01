/// Reading unsigned decimal integers written in ASCII digits: the one place where digits become a number, under
/// the wire's integers, the JSON scanner, `/proc` and `/sys` values and the journal's timestamps. Callers keep their
/// own rules on top (no leading zero on the wire, ranges, signs).
///
/// The work is done on raw bytes (`leading(_:)` on an `UnsafeRawBufferPointer`), so that it costs the same in every
/// build: a generic loop over a collection's elements is not specialized across modules in a debug build, and the
/// collector parses several integers per line.
public enum ASCIIDecimal {
    /// The ASCII digits at the start of `bytes`: how many there are (`length`, 0 when `bytes` does not start with
    /// one) and their value, nil when there are none or the value does not fit in a `UInt64`.
    public static func leading(_ bytes: UnsafeRawBufferPointer) -> (value: UInt64?, length: Int) {
        var value: UInt64 = 0
        var overflow = false
        var length = 0
        while length < bytes.count {
            let digit = bytes[length] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            length &+= 1
            guard !overflow else { continue }
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
            overflow = overflow1 || overflow2
            value = sum
        }
        return (length > 0 && !overflow ? value : nil, length)
    }

    /// `leading(_:)` of any collection of bytes (contiguous ones are read in place).
    @inlinable
    public static func leading<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> (value: UInt64?, length: Int) {
        if let result = bytes.withContiguousStorageIfAvailable({ leading(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return Array(bytes).withUnsafeBytes { leading($0) }
    }

    /// The value of `bytes` when they are all ASCII digits (at least one) and it fits in a `UInt64`; nil otherwise.
    public static func value(_ bytes: UnsafeRawBufferPointer) -> UInt64? {
        let (value, length) = leading(bytes)
        return length == bytes.count ? value : nil
    }

    /// `value(_:)` of any collection of bytes.
    @inlinable
    public static func value<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt64? {
        let (value, length) = leading(bytes)
        return length == bytes.count ? value : nil
    }
}

/// Reading hexadecimal digits written in ASCII (`0-9`, `a-f`, `A-F`): the one place where hex digits become a number,
/// under the JSON scanner's `\u` escapes, the proxy's percent-decoding, the journal's sequence numbers and the tail's
/// checkpoints.
public enum ASCIIHexadecimal {
    /// The value of one hexadecimal digit; nil for any other byte.
    @inline(__always)
    public static func digit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte &- UInt8(ascii: "A") &+ 10
        default: nil
        }
    }

    /// The value of `bytes` when they are 1 to 16 hexadecimal digits; nil otherwise.
    public static func value<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt64? {
        guard !bytes.isEmpty, bytes.count <= 16 else { return nil }
        var value: UInt64 = 0
        for byte in bytes {
            guard let digit = digit(byte) else { return nil }
            value = value << 4 | UInt64(digit)
        }
        return value
    }

    /// Whether every byte of `bytes` is a lower-case hexadecimal digit (`0-9`, `a-f`): digests as they are written.
    public static func isLowercase<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        bytes.allSatisfy { byte in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
        }
    }
}
