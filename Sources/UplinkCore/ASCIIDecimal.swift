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
        // Whole words where there is room: up to 19 digits (which cannot overflow) from at most three words, each
        // valued on its own and then combined, since every record line carries two 19-digit integers (its timestamp
        // and origin) and a loop would chain each word's multiplications onto the last.
        var value: UInt64 = 0
        var overflow = false
        var length = 0
        if bytes.count >= 8 {
            let first = word(bytes, at: 0)
            let firstRun = leadingDigitCount(first)
            guard firstRun == 8 else { return firstRun > 0 ? (runValue(first, firstRun), firstRun) : (nil, 0) }
            value = eightDigits(first)
            length = 8
            if bytes.count >= 16 {
                let second = word(bytes, at: 8)
                let secondRun = leadingDigitCount(second)
                guard secondRun == 8 else {
                    return (value &* powersOfTen[secondRun] &+ runValue(second, secondRun), 8 &+ secondRun)
                }
                value = value &* 100_000_000 &+ eightDigits(second)
                length = 16
                if bytes.count >= 24 {
                    let third = word(bytes, at: 16)
                    let thirdRun = leadingDigitCount(third)
                    if thirdRun <= 3 {
                        return (value &* powersOfTen[thirdRun] &+ runValue(third, thirdRun), 16 &+ thirdRun)
                    }
                }
            }
        }
        // The rest a digit at a time (near the end of `bytes`, or past 16 digits when the third word has more than
        // three): unchecked up to the 19th digit (10^19 − 1 < 2^64 − 1), checked for overflow after it.
        while length < 19 && length < bytes.count {
            let digit = bytes[length] &- UInt8(ascii: "0")
            guard digit < 10 else { return (length > 0 ? value : nil, length) }
            value = value &* 10 &+ UInt64(digit)
            length &+= 1
        }
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

    /// The value of the first `run` digits of `digits` (a `word`): they move to the high bytes, zeros below them.
    @inline(__always)
    private static func runValue(_ digits: UInt64, _ run: Int) -> UInt64 {
        run > 0 ? eightDigits(digits &<< UInt64(64 &- 8 &* run)) : 0
    }

    /// The eight bytes at `offset`, loaded little-endian, each XORed with `0` (a digit becomes its value).
    @inline(__always)
    private static func word(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) ^ 0x3030_3030_3030_3030
    }

    private static let powersOfTen: [UInt64] = [1, 10, 100, 1000, 10000, 100_000, 1_000_000, 10_000_000, 100_000_000]

    /// How many of the eight bytes of `digits` (loaded little-endian, each XORed with `0`) are digits before the
    /// first that is not: a digit is now 0...9, so its high nibble is zero and its low nibble plus 6 stays below 16.
    /// Neither test carries from one byte into the next.
    @inline(__always)
    private static func leadingDigitCount(_ digits: UInt64) -> Int {
        let highNibbles = digits & 0xF0F0_F0F0_F0F0_F0F0
        let lowAboveNine = ((digits & 0x0F0F_0F0F_0F0F_0F0F) &+ 0x0606_0606_0606_0606) & 0x1010_1010_1010_1010
        return (highNibbles | lowAboveNine).trailingZeroBitCount &>> 3
    }

    /// The value of eight digits 0...9, one per byte, the most significant in the lowest byte: pairs, then
    /// quadruples, then the whole, each step one multiplication.
    @inline(__always)
    private static func eightDigits(_ digits: UInt64) -> UInt64 {
        let pairs = (digits &* (10 << 8 + 1)) &>> 8 & 0x00FF_00FF_00FF_00FF
        let quadruples = (pairs &* (100 << 16 + 1)) &>> 16 & 0x0000_FFFF_0000_FFFF
        return (quadruples &* (10000 << 32 + 1)) &>> 32
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
