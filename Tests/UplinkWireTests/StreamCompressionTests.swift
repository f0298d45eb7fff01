import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport
import UplinkWire

/// `StreamCompressor` and `StreamDecompressor`: round trips whatever the chunk cuts, every flush boundary decodable on
/// its own, corrupt input and resource limits refused with a typed error.
@Suite("Stream compression", .computeBound)
struct StreamCompressionTests {
    static let compressed: [WireCompression] = [.zstd, .gzip]

    /// Record lines as the uplink sends them, `count` of them from `first`, with varied values.
    static func lines(from first: UInt64, count: Int, random: inout SplitMix64) -> ByteBuffer {
        var buffer = ByteBufferAllocator().buffer(capacity: count * 160)
        for sequence in first..<(first + UInt64(count)) {
            let record = Record.metric(
                ["cpu.user", "memory.used", "load.1m", "net.rx_bytes"].randomElement(using: &random)!,
                value: Double(Int.random(in: 0...100_000, using: &random)) / 100, unit: "percent",
                tags: [Tag("cpu", "cpu\(Int.random(in: 0..<4, using: &random))")], source: "cpu",
                timestamp: 1_763_704_818_000_000_000 + Int64(sequence) * 1_000_000_000)
            var frame: [UInt8] = []
            NDJSONFrameEncoder().encodeFrame(record, into: &frame)
            _ = frame.withUnsafeBytes { WireLineWriter.appendRecordLine(sequence: sequence, frame: $0, to: &buffer) }
        }
        return buffer
    }

    /// Compresses `passes` with one flush each; returns the compressed bytes and the end offset of every pass's
    /// output.
    static func compress(_ encoding: WireCompression, _ passes: [ByteBuffer]) throws -> (bytes: [UInt8], ends: [Int]) {
        let compressor = try StreamCompressor(encoding)
        var output = ByteBuffer()
        var ends: [Int] = []
        for pass in passes {
            try compressor.compress(pass, flush: true, into: &output)
            ends.append(output.readableBytes)
        }
        return (Array(output.readableBytesView), ends)
    }

    /// Decodes `chunks` in order with a fresh decompressor.
    static func decode(_ encoding: WireCompression, _ chunks: [ArraySlice<UInt8>]) throws -> [UInt8] {
        let decompressor = try StreamDecompressor(encoding)
        var output: [UInt8] = []
        for chunk in chunks {
            decompressor.feed(ByteBuffer(bytes: chunk))
            var pieces = 0
            while let piece = try decompressor.next() {
                #expect(piece.readableBytes > 0 && piece.readableBytes <= StreamDecompressor.pieceBytes)
                output.append(contentsOf: piece.readableBytesView)
                pieces += 1
                try #require(pieces < 10_000)
            }
        }
        return output
    }

    static func passes(count: Int, seed: UInt64) -> [ByteBuffer] {
        var random = SplitMix64(seed: seed)
        var first: UInt64 = 1
        return (0..<count).map { _ in
            let lines = Int.random(in: 1...12, using: &random)
            defer { first += UInt64(lines) }
            return Self.lines(from: first, count: lines, random: &random)
        }
    }

    @Test("Header names: zstd, gzip, none; identity and x-gzip accepted, anything else not", arguments: WireCompression.allCases)
    func headerNames(_ encoding: WireCompression) {
        if let header = encoding.contentEncoding {
            #expect(WireCompression(contentEncoding: header) == encoding)
            #expect(WireCompression(contentEncoding: " \(header.uppercased())\t") == encoding)
        } else {
            #expect(WireCompression(contentEncoding: "identity") == WireCompression.none)
        }
        #expect(WireCompression(contentEncoding: "x-gzip") == .gzip)
        #expect(WireCompression(contentEncoding: "br") == nil)
        #expect(WireCompression(contentEncoding: "gzip, zstd") == nil)
    }

    @Test("Round trip with the compressed stream cut in two at every byte", arguments: compressed)
    func everyCut(_ encoding: WireCompression) throws {
        let passes = Self.passes(count: 20, seed: 1)
        let plain = passes.flatMap { Array($0.readableBytesView) }
        let (bytes, _) = try Self.compress(encoding, passes)
        #expect(bytes.count < plain.count / 2, "\(bytes.count) compressed bytes for \(plain.count)")
        for cut in 0...bytes.count {
            let decoded = try Self.decode(encoding, [bytes[..<cut], bytes[cut...]])
            #expect(decoded == plain, "cut at \(cut)")
            if decoded != plain { return }
        }
    }

    @Test("Round trip with the compressed stream in chunks of every size from 1 to 97 bytes", arguments: compressed)
    func everyChunkSize(_ encoding: WireCompression) throws {
        let passes = Self.passes(count: 30, seed: 2)
        let plain = passes.flatMap { Array($0.readableBytesView) }
        let (bytes, _) = try Self.compress(encoding, passes)
        for size in 1...97 {
            let chunks = stride(from: 0, to: bytes.count, by: size).map { bytes[$0..<min($0 + size, bytes.count)] }
            #expect(try Self.decode(encoding, chunks) == plain, "chunks of \(size)")
        }
    }

    @Test("Each flush boundary: the output up to a pass's end decodes to exactly the lines of the passes so far", arguments: compressed)
    func flushBoundaries(_ encoding: WireCompression) throws {
        let passes = Self.passes(count: 40, seed: 3)
        let (bytes, ends) = try Self.compress(encoding, passes)
        var expected: [UInt8] = []
        for (index, end) in ends.enumerated() {
            expected.append(contentsOf: passes[index].readableBytesView)
            #expect(expected.last == UInt8(ascii: "\n"))
            #expect(try Self.decode(encoding, [bytes[..<end]]) == expected, "after pass \(index)")
        }
    }

    @Test("Passes without flush: nothing is lost once a later pass flushes", arguments: compressed)
    func continueThenFlush(_ encoding: WireCompression) throws {
        let passes = Self.passes(count: 10, seed: 4)
        let compressor = try StreamCompressor(encoding)
        var output = ByteBuffer()
        for (index, pass) in passes.enumerated() {
            try compressor.compress(pass, flush: index == passes.count - 1, into: &output)
        }
        let plain = passes.flatMap { Array($0.readableBytesView) }
        #expect(try Self.decode(encoding, [Array(output.readableBytesView)[...]]) == plain)
    }

    @Test("Large input: output comes in bounded pieces, and a flush of nothing adds a decodable nothing", arguments: compressed)
    func largeInput(_ encoding: WireCompression) throws {
        var random = SplitMix64(seed: 5)
        let big = Self.lines(from: 1, count: 20_000, random: &random)
        let compressor = try StreamCompressor(encoding)
        var output = ByteBuffer()
        try compressor.compress(big, flush: true, into: &output)
        try compressor.compress(ByteBuffer(), flush: true, into: &output)
        let decoded = try Self.decode(encoding, [Array(output.readableBytesView)[...]])
        #expect(decoded == Array(big.readableBytesView))
    }

    @Test("A fresh context per stream: a second stream's bytes decode with a fresh decompressor alone", arguments: compressed)
    func freshContextPerStream(_ encoding: WireCompression) throws {
        let first = Self.passes(count: 5, seed: 6)
        let second = Self.passes(count: 5, seed: 7)
        _ = try Self.compress(encoding, first)
        let (bytes, _) = try Self.compress(encoding, second)
        #expect(try Self.decode(encoding, [bytes[...]]) == second.flatMap { Array($0.readableBytesView) })
    }

    @Test("Garbage is refused as corrupt, and the decompressor stays failed", arguments: compressed)
    func garbage(_ encoding: WireCompression) throws {
        let decompressor = try StreamDecompressor(encoding)
        decompressor.feed(ByteBuffer(string: #"{"seq":1,"ts":1,"log":"plain text where compressed bytes belong"}"# + "\n"))
        let error = #expect(throws: WireCompressionError.self) { try decompressor.next() }
        #expect(error?.code == .corrupt)
        #expect(throws: WireCompressionError.self) { try decompressor.next() }
    }

    @Test("A valid stream with bytes corrupted after its header is refused as corrupt or decodes to other bytes, never crashes", arguments: compressed)
    func corruptedMiddle(_ encoding: WireCompression) throws {
        let passes = Self.passes(count: 10, seed: 8)
        let plain = passes.flatMap { Array($0.readableBytesView) }
        let (bytes, _) = try Self.compress(encoding, passes)
        var random = SplitMix64(seed: 9)
        var refused = 0
        for _ in 0..<200 {
            var damaged = bytes
            for _ in 0..<4 {
                damaged[Int.random(in: 10..<damaged.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            do {
                let decoded = try Self.decode(encoding, [damaged[...]])
                #expect(decoded.count <= StreamDecompressor.minimumOutputLimit)
                _ = decoded == plain
            } catch let error as WireCompressionError {
                #expect(error.code == .corrupt)
                refused += 1
            }
        }
        #expect(refused > 0)
    }

    @Test("zstd bomb: a small chunk that decodes to more than 4 MiB is refused after at most the limit plus one piece")
    func zstdBomb() throws {
        let compressor = try StreamCompressor(.zstd)
        var bomb = ByteBuffer()
        let zeros = ByteBuffer(repeating: UInt8(ascii: "\n"), count: 64 << 20)
        try compressor.compress(zeros, flush: true, into: &bomb)
        #expect(bomb.readableBytes < 64 << 10, "\(bomb.readableBytes) bytes")
        let decompressor = try StreamDecompressor(.zstd)
        decompressor.feed(bomb)
        var produced = 0
        let error = #expect(throws: WireCompressionError.self) {
            for _ in 0..<1_000 {
                guard let piece = try decompressor.next() else { break }
                produced += piece.readableBytes
            }
        }
        #expect(error?.code == .bomb)
        #expect(error?.isResourceLimit == true)
        #expect(produced <= StreamDecompressor.outputLimit(inputBytes: bomb.readableBytes))
    }

    @Test("The limit: 4 MiB per chunk at least, 1024 times the chunk above that")
    func outputLimit() {
        #expect(StreamDecompressor.outputLimit(inputBytes: 0) == 4 << 20)
        #expect(StreamDecompressor.outputLimit(inputBytes: 4096) == 4 << 20)
        #expect(StreamDecompressor.outputLimit(inputBytes: 64 << 10) == 64 << 20)
        #expect(StreamDecompressor.outputLimit(inputBytes: .max) > 0)
    }

    /// A zstd frame by hand: magic, a header with only a window descriptor (`exponent << 3`: window 2^(10+exponent)),
    /// and one last raw block holding `x`.
    static func zstdFrame(windowExponent: UInt8) -> ByteBuffer {
        ByteBuffer(bytes: [0x28, 0xB5, 0x2F, 0xFD, 0x00, windowExponent << 3, 0x09, 0x00, 0x00, UInt8(ascii: "x")])
    }

    @Test("zstd: a frame with an 8 MiB window is accepted, one with 16 MiB is refused as too large")
    func zstdWindowLimit() throws {
        let accepted = try StreamDecompressor(.zstd)
        accepted.feed(Self.zstdFrame(windowExponent: 13))
        #expect(try accepted.next().map { String(buffer: $0) } == "x")
        #expect(try accepted.next() == nil)

        let refused = try StreamDecompressor(.zstd)
        refused.feed(Self.zstdFrame(windowExponent: 14))
        let error = #expect(throws: WireCompressionError.self) { try refused.next() }
        #expect(error?.code == .windowTooLarge)
    }

    @Test("Compression pays: 200 metric lines in 20 passes shrink at least fivefold with zstd, threefold with gzip", arguments: compressed)
    func ratio(_ encoding: WireCompression) throws {
        let passes = Self.passes(count: 20, seed: 10)
        let plain = passes.reduce(0) { $0 + $1.readableBytes }
        let (bytes, _) = try Self.compress(encoding, passes)
        #expect(bytes.count * (encoding == .zstd ? 5 : 3) < plain, "\(bytes.count) of \(plain)")
    }

    @Test("a gzip member of a whole body: decodes to the body and ends with its trailer (CRC and size)")
    func gzipMember() throws {
        var body = ByteBuffer()
        for index in 0..<5_000 { body.writeString("{\"metric\":\"cpu\",\"value\":\(index)}\n") }
        let member = try StreamCompressor.gzipMember(body, level: 1)
        let bytes = Array(member.readableBytesView)
        #expect(bytes.prefix(2) == [0x1f, 0x8b], "the gzip magic")
        #expect(bytes.count * 5 < body.readableBytes, "\(bytes.count) of \(body.readableBytes)")
        let size = bytes.suffix(4).reversed().reduce(0) { $0 << 8 | Int($1) }
        #expect(size == body.readableBytes, "ISIZE, the trailer's last field: the member is complete")
        #expect(try Self.decode(.gzip, [bytes[...]]) == Array(body.readableBytesView))
        #expect(try StreamCompressor.gzipMember(ByteBuffer(), level: 1).readableBytes == 20, "header and trailer")
    }
}
