import Testing
import UplinkCore

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
