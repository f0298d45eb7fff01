/// Eight bytes at a time: where a given byte stands in a 64-bit word of them, loaded little-endian (the first byte in
/// the lowest bits). The scans of the byte layer that look at a word at once use it (`NewlineScan.last`, the wire
/// parser's key path).
public enum ByteWord {
    /// `word` with the high bit of each byte set where that byte equals `byte`, and no other bit set. No carry
    /// crosses from one byte to the next, so every flag is exact: the lowest is the first match and the highest the
    /// last.
    @inlinable
    public static func matches(_ byte: UInt8, in word: UInt64) -> UInt64 {
        let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        // Matching bytes become zero; a byte keeps its high bit clear in `(x & low7) + low7 | x` only when it is zero.
        let zeroed = word ^ (0x0101_0101_0101_0101 &* UInt64(byte))
        return ~(((zeroed & low7) &+ low7) | zeroed | low7)
    }
}
