import Testing
import UplinkCore
import UplinkTestSupport

@Suite("ASCII decimal")
struct ASCIIDecimalTests {
    @Test("leading digits: their value and count, stopping at the first other byte")
    func leading() {
        #expect(ASCIIDecimal.leading(Array("123abc".utf8)) == (123, 3))
        #expect(ASCIIDecimal.leading(Array("007".utf8)) == (7, 3), "leading zeros are the caller's rule")
        #expect(ASCIIDecimal.leading(Array("x1".utf8)) == (nil, 0))
        #expect(ASCIIDecimal.leading([UInt8]()) == (nil, 0))
        #expect(ASCIIDecimal.leading(Array("/9:".utf8)) == (nil, 0), "the bytes around the digits are not digits")
    }

    @Test("the UInt64 boundary: the largest value fits, one more is nil but its digits are still counted")
    func overflow() {
        #expect(ASCIIDecimal.value(Array("18446744073709551615".utf8)) == .max)
        #expect(ASCIIDecimal.value(Array("18446744073709551616".utf8)) == nil)
        #expect(ASCIIDecimal.leading(Array("99999999999999999999999,".utf8)) == (nil, 23))
    }

    @Test("eight bytes at a time agrees with a digit at a time, for every run length and every byte after it",
          .computeBound, arguments: 1...4 as ClosedRange<UInt64>)
    func agreesWithADigitAtATime(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        // Bytes that end a run, chosen next to the digits in each nibble the fast test looks at.
        let stoppers: [UInt8] = [0x00, 0x20, 0x29, 0x2F, 0x3A, 0x3F, 0x40, 0x70, 0x79, 0xB0, 0xB9, 0xF9, 0xFA, 0xFF]
        for digits in 0...24 {
            for _ in 0..<40 {
                var bytes = (0..<digits).map { _ in UInt8(ascii: "0") + UInt8(random.next() % 10) }
                let tail = Int(random.next() % 10)
                bytes += (0..<tail).map { index in
                    index == 0 ? stoppers[Int(random.next() % UInt64(stoppers.count))] : UInt8(truncatingIfNeeded: random.next())
                }
                // Sometimes the run starts after a prefix, so the fast reads are unaligned.
                let prefix = Int(random.next() % 3)
                let buffer = Array(repeating: UInt8(ascii: "x"), count: prefix) + bytes
                let result = buffer.withUnsafeBytes { ASCIIDecimal.leading(UnsafeRawBufferPointer(rebasing: $0[prefix...])) }
                let expected = Self.digitAtATime(bytes)
                #expect(result == expected, "\(bytes)")
            }
        }
    }

    /// The obvious reading the fast one is checked against.
    private static func digitAtATime(_ bytes: [UInt8]) -> (value: UInt64?, length: Int) {
        var value: UInt64? = 0
        var length = 0
        for byte in bytes {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { break }
            length += 1
            if let current = value {
                let (times10, overflow1) = current.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
                value = overflow1 || overflow2 ? nil : sum
            }
        }
        return (length > 0 ? value : nil, length)
    }

    @Test("value: every byte a digit, at least one")
    func value() {
        #expect(ASCIIDecimal.value(Array("0".utf8)) == 0)
        #expect(ASCIIDecimal.value(Array("42".utf8)) == 42)
        #expect(ASCIIDecimal.value(Array("4 2".utf8)) == nil)
        #expect(ASCIIDecimal.value(Array("-1".utf8)) == nil)
        #expect(ASCIIDecimal.value(Array("+1".utf8)) == nil)
        #expect(ASCIIDecimal.value([UInt8]()) == nil)
        #expect(ASCIIDecimal.value(Array("12".utf8)[1...]) == 2, "any collection of bytes, slices too")
    }
}

@Suite("ASCII hexadecimal")
struct ASCIIHexadecimalTests {
    @Test("digits of both cases, and nothing else")
    func digits() {
        #expect(ASCIIHexadecimal.digit(UInt8(ascii: "0")) == 0)
        #expect(ASCIIHexadecimal.digit(UInt8(ascii: "9")) == 9)
        #expect(ASCIIHexadecimal.digit(UInt8(ascii: "a")) == 10)
        #expect(ASCIIHexadecimal.digit(UInt8(ascii: "F")) == 15)
        for byte in [UInt8(ascii: "g"), UInt8(ascii: "G"), UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "@"), 0, 0xFF] {
            #expect(ASCIIHexadecimal.digit(byte) == nil, "byte \(byte)")
        }
    }

    @Test("values of 1 to 16 digits; empty, longer or with another byte: nil")
    func values() {
        #expect(ASCIIHexadecimal.value(Array("ff".utf8)) == 255)
        #expect(ASCIIHexadecimal.value(Array("FFFFFFFFFFFFFFFF".utf8)) == .max)
        #expect(ASCIIHexadecimal.value(Array("00000000000000001".utf8)) == nil, "17 digits")
        #expect(ASCIIHexadecimal.value([UInt8]()) == nil)
        #expect(ASCIIHexadecimal.value(Array("0x1".utf8)) == nil)
        #expect(ASCIIHexadecimal.value(Array("-1".utf8)) == nil)
    }

    @Test("lower-case digests: upper case and other bytes are refused")
    func lowercase() {
        #expect(ASCIIHexadecimal.isLowercase(Array("0123456789abcdef".utf8)))
        #expect(!ASCIIHexadecimal.isLowercase(Array("ABCDEF".utf8)))
        #expect(!ASCIIHexadecimal.isLowercase(Array("12g4".utf8)))
    }
}
