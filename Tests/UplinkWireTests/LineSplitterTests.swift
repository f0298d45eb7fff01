import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport
import UplinkWire

@Suite(.computeBound) struct LineSplitterTests {
    enum Piece: Equatable, CustomStringConvertible {
        case line([UInt8])
        case tooLong(Int)

        var description: String {
            switch self {
            case .line(let bytes): "line(\(String(decoding: bytes, as: UTF8.self).debugDescription))"
            case .tooLong(let length): "tooLong(\(length))"
            }
        }
    }

    struct Outcome: Equatable {
        var pieces: [Piece]
        var cut: Int?
    }

    /// What a splitter must report for `stream`, computed the obvious way on the whole stream.
    static func reference(_ stream: [UInt8], maxLineBytes: Int) -> Outcome {
        var pieces: [Piece] = []
        var start = 0
        for index in stream.indices where stream[index] == UInt8(ascii: "\n") {
            var line = stream[start..<index]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            pieces.append(line.count > maxLineBytes ? .tooLong(line.count) : .line(Array(line)))
            start = index + 1
        }
        return Outcome(pieces: pieces, cut: stream.count > start ? stream.count - start : nil)
    }

    /// Feeds `stream` in chunks of the given sizes (the last chunk takes the rest), draining lines after each one.
    static func split(
        _ stream: [UInt8], chunkSizes: [Int], maxLineBytes: Int, maxBuffered: inout Int
    ) -> Outcome {
        var splitter = LineSplitter(maxLineBytes: maxLineBytes)
        var pieces: [Piece] = []
        var offset = 0
        var sizes = chunkSizes[...]
        let allocator = ByteBufferAllocator()
        while offset < stream.count || !sizes.isEmpty {
            let size = min(sizes.popFirst() ?? stream.count, stream.count - offset)
            splitter.append(allocator.buffer(bytes: stream[offset..<offset + size]))
            offset += size
            while let piece = splitter.nextLine() {
                switch piece {
                case .line(let line): pieces.append(.line(Array(line.readableBytesView)))
                case .tooLong(let length): pieces.append(.tooLong(length))
                }
            }
            maxBuffered = max(maxBuffered, splitter.bufferedBytes)
        }
        return Outcome(pieces: pieces, cut: splitter.finish())
    }

    static func split(_ stream: [UInt8], chunkSizes: [Int], maxLineBytes: Int) -> Outcome {
        var ignored = 0
        return split(stream, chunkSizes: chunkSizes, maxLineBytes: maxLineBytes, maxBuffered: &ignored)
    }

    /// A stream rich in edge cases around `maxLineBytes`: lines just below, at and above the limit, CRLF and lone
    /// CR, empty lines, and an unterminated last line when `cut` is set.
    static func stream(maxLineBytes: Int, lines: Int, cut: Bool, using random: inout SplitMix64) -> [UInt8] {
        var stream: [UInt8] = []
        for _ in 0..<lines {
            let length = [0, 1, maxLineBytes - 1, maxLineBytes, maxLineBytes + 1, maxLineBytes + 2, 2 * maxLineBytes + 3,
                          Int.random(in: 0...3 * maxLineBytes, using: &random)].randomElement(using: &random)!
            var line = (0..<max(0, length)).map { _ in
                [UInt8(ascii: "a"), UInt8(ascii: "{"), UInt8(ascii: "\r"), 0xC3, 0xA9].randomElement(using: &random)!
            }
            if Bool.random(using: &random) { line.append(UInt8(ascii: "\r")) }  // CRLF
            stream += line
            stream.append(UInt8(ascii: "\n"))
        }
        if cut { stream += Array("partial\r".utf8) }
        return stream
    }

    @Test func everySplitPositionGivesTheSameLines() {
        var random = SplitMix64(seed: 0x5111_0001)
        for maxLineBytes in [1, 4, 8] {
            for cut in [false, true] {
                let stream = Self.stream(maxLineBytes: maxLineBytes, lines: 24, cut: cut, using: &random)
                let expected = Self.reference(stream, maxLineBytes: maxLineBytes)
                #expect(Self.split(stream, chunkSizes: [], maxLineBytes: maxLineBytes) == expected)
                for first in 0...stream.count {
                    #expect(Self.split(stream, chunkSizes: [first], maxLineBytes: maxLineBytes) == expected, "split at \(first)")
                }
                // Every pair of cut positions over a prefix.
                let prefix = Array(stream.prefix(90))
                let expectedPrefix = Self.reference(prefix, maxLineBytes: maxLineBytes)
                for first in 0...prefix.count {
                    for second in 0...(prefix.count - first) {
                        #expect(Self.split(prefix, chunkSizes: [first, second], maxLineBytes: maxLineBytes) == expectedPrefix)
                    }
                }
                #expect(Self.split(stream, chunkSizes: Array(repeating: 1, count: stream.count), maxLineBytes: maxLineBytes) == expected)
            }
        }
    }

    @Test func randomChunkSizesGiveTheSameLines() {
        var random = SplitMix64(seed: 0x5111_0002)
        for _ in 0..<200 {
            let maxLineBytes = Int.random(in: 1...64, using: &random)
            let stream = Self.stream(
                maxLineBytes: maxLineBytes, lines: Int.random(in: 0...60, using: &random), cut: Bool.random(using: &random),
                using: &random)
            let sizes = (0..<stream.count).map { _ in Int.random(in: 0...(2 * maxLineBytes + 5), using: &random) }
            #expect(Self.split(stream, chunkSizes: sizes, maxLineBytes: maxLineBytes) == Self.reference(stream, maxLineBytes: maxLineBytes))
        }
    }

    @Test func crlfAndEmptyLines() {
        let stream = Array("a\r\n\r\n\n\rb\r\nc\r\r\n".utf8)
        let outcome = Self.split(stream, chunkSizes: [], maxLineBytes: 10)
        #expect(outcome.pieces == [.line(Array("a".utf8)), .line([]), .line([]), .line(Array("\rb".utf8)), .line(Array("c\r".utf8))])
        #expect(outcome.cut == nil)
    }

    @Test func lineOfExactlyTheLimitWithCRLFSplitAfterTheCR() {
        // "abcd\r" arrives before its "\n": the line is 4 bytes (the limit), not too long.
        let outcome = Self.split(Array("abcd\r\nabcde\r\n".utf8), chunkSizes: [5, 7], maxLineBytes: 4)
        #expect(outcome.pieces == [.line(Array("abcd".utf8)), .tooLong(5)])
    }

    @Test func tooLongLinesAreReportedWithTheirLengthAndMemoryStaysBounded() {
        let maxLineBytes = 64 * 1024
        let chunkSize = 4096
        let longLength = 10 * 1024 * 1024
        var splitter = LineSplitter(maxLineBytes: maxLineBytes)
        let allocator = ByteBufferAllocator()
        let filler = allocator.buffer(repeating: UInt8(ascii: "x"), count: chunkSize)
        splitter.append(allocator.buffer(string: "{\"before\":1}\n"))
        #expect(splitter.nextLine() == .line(allocator.buffer(string: "{\"before\":1}")))
        var maxBuffered = 0
        for _ in 0..<(longLength / chunkSize) {
            splitter.append(filler)
            #expect(splitter.nextLine() == nil)
            maxBuffered = max(maxBuffered, splitter.bufferedBytes)
        }
        splitter.append(allocator.buffer(string: "\r\n{\"after\":2}\n"))
        #expect(splitter.nextLine() == .tooLong(length: longLength))
        #expect(splitter.nextLine() == .line(allocator.buffer(string: "{\"after\":2}")))
        #expect(splitter.nextLine() == nil)
        #expect(maxBuffered <= maxLineBytes + 1 + chunkSize)
        #expect(splitter.finish() == nil)
    }

    @Test func finishReportsACutLastLine() {
        let allocator = ByteBufferAllocator()
        var splitter = LineSplitter(maxLineBytes: 8)
        #expect(splitter.finish() == nil)
        splitter.append(allocator.buffer(string: "one\ntw"))
        #expect(splitter.nextLine() == .line(allocator.buffer(string: "one")))
        #expect(splitter.nextLine() == nil)
        splitter.append(allocator.buffer(string: "o"))
        #expect(splitter.nextLine() == nil)
        #expect(splitter.finish() == 3)
        // The splitter starts afresh after finish.
        splitter.append(allocator.buffer(string: "three\n"))
        #expect(splitter.nextLine() == .line(allocator.buffer(string: "three")))
        // A cut line that was already too long is reported with its full length.
        splitter.append(allocator.buffer(string: "0123456789"))
        #expect(splitter.nextLine() == nil)
        splitter.append(allocator.buffer(string: "0123456789"))
        #expect(splitter.nextLine() == nil)
        #expect(splitter.finish() == 20)
        splitter.append(allocator.buffer(string: "x\n"))
        #expect(splitter.nextLine() == .line(allocator.buffer(string: "x")))
        #expect(splitter.finish() == nil)
    }

    @Test func emptyChunksAreHarmless() {
        let allocator = ByteBufferAllocator()
        var splitter = LineSplitter(maxLineBytes: 8)
        splitter.append(allocator.buffer(capacity: 0))
        #expect(splitter.nextLine() == nil)
        splitter.append(allocator.buffer(string: "ab"))
        splitter.append(allocator.buffer(capacity: 0))
        splitter.append(allocator.buffer(string: "\n"))
        #expect(splitter.nextLine() == .line(allocator.buffer(string: "ab")))
    }
}
