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

    @Test("the last line: terminated, \\r\\n-terminated, unfinished, alone")
    func lastLine() {
        func last(_ text: String) -> String? {
            Array(text.utf8).withUnsafeBytes { raw in
                NewlineScan.lastLine(in: raw).map { String(decoding: raw[$0], as: UTF8.self) }
            }
        }
        #expect(last("a\nb\n") == "b")
        #expect(last("a\nb\r\n") == "b")
        #expect(last("a\nb") == "b")
        #expect(last("only\n") == "only")
        #expect(last("\n") == "")
        #expect(last("") == nil)
    }
}
