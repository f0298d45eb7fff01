import Testing
import UplinkCore

@Suite("Newline scan")
struct NewlineScanTests {
    /// The lines `NewlineScan.forEachLine` finds in `text`, with where each next line starts, and the unfinished rest.
    private func split(_ text: String, from start: Int = 0) -> (lines: [String], nexts: [Int], rest: String) {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { raw in
            var lines: [String] = []
            var nexts: [Int] = []
            let unfinished = NewlineScan.forEachLine(in: raw, from: start) { range, next in
                lines.append(String(decoding: raw[range], as: UTF8.self))
                nexts.append(next)
            }
            return (lines, nexts, String(decoding: raw[unfinished...], as: UTF8.self))
        }
    }

    @Test("lines end at \\n, one \\r before it is not part of the text, and the rest is the unfinished line")
    func lines() {
        let result = split("a\nbc\r\n\n\r\r\nend")
        #expect(result.lines == ["a", "bc", "", "\r"], "only the one \\r right before the \\n is dropped")
        #expect(result.nexts == [2, 6, 7, 10])
        #expect(result.rest == "end")
    }

    @Test("a start offset, no newline at all, and an empty buffer")
    func edges() {
        #expect(split("skip\nx\ny", from: 5).lines == ["x"])
        #expect(split("skip\nx\ny", from: 5).rest == "y")
        #expect(split("no newline").lines.isEmpty)
        #expect(split("no newline").rest == "no newline")
        #expect(split("").lines.isEmpty)
        #expect(split("\r\n").lines == [""], "a lone \\r\\n is an empty line")
    }

    @Test("first and last newline, bounded by offsets")
    func firstAndLast() {
        let bytes = Array("ab\ncd\nef".utf8)
        bytes.withUnsafeBytes { raw in
            #expect(NewlineScan.first(in: raw) == 2)
            #expect(NewlineScan.first(in: raw, from: 3) == 5)
            #expect(NewlineScan.first(in: raw, from: 6) == nil)
            #expect(NewlineScan.first(in: raw, from: 99) == nil)
            #expect(NewlineScan.last(in: raw) == 5)
            #expect(NewlineScan.last(in: raw, before: 5) == 2)
            #expect(NewlineScan.last(in: raw, before: 2) == nil)
        }
        [UInt8]().withUnsafeBytes { raw in
            #expect(NewlineScan.first(in: raw) == nil)
            #expect(NewlineScan.last(in: raw) == nil)
        }
    }

    @Test("the last newline before every end, in buffers of every length up to 40 with a newline at any position")
    func lastAgainstAByteLoop() {
        func byteLoop(_ bytes: [UInt8], before end: Int) -> Int? {
            bytes[..<end].lastIndex(of: UInt8(ascii: "\n"))
        }
        // Around a newline: its neighbours in value (\t, \v, \r) and bytes with the high bit set, which a
        // has-zero-byte test with borrows would flag wrongly above a real match.
        let fillers: [UInt8] = [0x09, 0x0B, 0x0D, 0x8A, 0xFF, 0x00, UInt8(ascii: "x")]
        var random = SystemRandomNumberGenerator()
        for length in 0...40 {
            for _ in 0..<40 {
                var bytes = (0..<length).map { _ in fillers.randomElement(using: &random)! }
                for _ in 0..<Int.random(in: 0...3, using: &random) where length > 0 {
                    bytes[Int.random(in: 0..<length, using: &random)] = UInt8(ascii: "\n")
                }
                bytes.withUnsafeBytes { raw in
                    for end in 0...length {
                        #expect(NewlineScan.last(in: raw, before: end) == byteLoop(bytes, before: end), "\(bytes) before \(end)")
                    }
                    #expect(NewlineScan.last(in: raw) == byteLoop(bytes, before: length))
                }
            }
        }
    }
}
