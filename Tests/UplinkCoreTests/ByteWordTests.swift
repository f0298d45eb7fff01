import Testing
import UplinkCore

@Suite("Byte word")
struct ByteWordTests {
    @Test("every byte value is flagged where it stands and nowhere else, beside its neighbours in value")
    func matchesAreExact() {
        var random = SystemRandomNumberGenerator()
        for byte in UInt8.min...UInt8.max {
            // Words of the byte and its neighbours (where a borrow or a carry would flag wrongly), and random ones.
            let near: [UInt8] = [byte, byte &- 1, byte &+ 1, byte ^ 0x80, 0x00, 0xFF]
            for _ in 0..<64 {
                let bytes = (0..<8).map { _ in Bool.random(using: &random) ? near.randomElement(using: &random)! : UInt8.random(in: 0...255, using: &random) }
                let word = bytes.enumerated().reduce(UInt64(0)) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
                let expected = bytes.enumerated().reduce(UInt64(0)) { $0 | ($1.element == byte ? 0x80 << (8 * UInt64($1.offset)) : 0) }
                #expect(ByteWord.matches(byte, in: word) == expected, "\(byte) in \(bytes)")
            }
        }
    }
}
