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
