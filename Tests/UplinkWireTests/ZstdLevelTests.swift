import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkWire

/// The zstd level follows the stream's rate, and a stream whose level changed (a new zstd frame) decodes as one.
@Suite("zstd level by rate", .computeBound)
struct ZstdLevelTests {
    let start = ContinuousClock.now

    @Test func aStreamStartsBusyTricklesAfterAQuietObservationAndALargePassMakesItBusyAtOnce() {
        var policy = ZstdLevelPolicy(now: start)
        #expect(policy.level(forPass: 500, now: start) == ZstdLevelPolicy.bulkLevel)
        // 10 s at 5 KiB/s: trickling.
        for second in 1...10 { _ = policy.level(forPass: 5 << 10, now: start + .seconds(second)) }
        #expect(policy.level == ZstdLevelPolicy.trickleLevel)
        // One large pass: busy at once.
        #expect(policy.level(forPass: 64 << 10, now: start + .seconds(11)) == ZstdLevelPolicy.bulkLevel)
        // Small passes at 40 KiB/s for a whole observation: still busy.
        for second in 12...22 { _ = policy.level(forPass: 40 << 10, now: start + .seconds(second)) }
        #expect(policy.level == ZstdLevelPolicy.bulkLevel)
        // Quiet again.
        for second in 23...34 { _ = policy.level(forPass: 1 << 10, now: start + .seconds(second)) }
        #expect(policy.level == ZstdLevelPolicy.trickleLevel)
    }

    @Test func levelChangesStartNewFramesThatDecodeAsOneStreamAtAnyCut() throws {
        let clock = ManualClock(start)
        let compressor = try StreamCompressor(.zstd, now: { clock.now })
        var random = SplitMix64(seed: 5)
        var output = ByteBuffer()
        var plain: [UInt8] = []
        var first: UInt64 = 1
        // 30 s of small passes (trickle after 10 s), one bulk pass, then small passes again.
        for step in 0..<60 {
            clock.now = start + .milliseconds(500 * step)
            let count = step == 40 ? 2000 : Int.random(in: 1...8, using: &random)
            let pass = StreamCompressionTests.lines(from: first, count: count, random: &random)
            first += UInt64(count)
            plain += pass.readableBytesView
            try compressor.compress(pass, flush: true, into: &output)
        }
        let bytes = Array(output.readableBytesView)
        let magic: [UInt8] = [0x28, 0xB5, 0x2F, 0xFD]
        let frames = (0...(bytes.count - 4)).filter { Array(bytes[$0..<($0 + 4)]) == magic }.count
        #expect(frames >= 3, "trickle, bulk and trickle again: \(frames) frames")
        for size in [1, 7, 100, 4096, bytes.count] {
            let chunks = stride(from: 0, to: bytes.count, by: size).map { bytes[$0..<min($0 + size, bytes.count)] }
            #expect(try StreamCompressionTests.decode(.zstd, chunks) == plain, "chunks of \(size)")
        }
    }
}

/// What one stream's zstd context costs at each level: its match tables are sized for the 128 KiB window, not for
/// the level's own (level 19 alone would size them for 8 MiB: 82 MiB per stream, which an idle agent carried).
@Suite("zstd context memory", .computeBound)
struct ZstdMemoryTests {
    @Test func bothLevelsStayWithinAFewMebibytes() throws {
        let start = ContinuousClock.now
        let clock = ManualClock(start)
        let compressor = try StreamCompressor(.zstd, now: { clock.now })
        var random = SplitMix64(seed: 9)
        var output = ByteBuffer()
        var first: UInt64 = 1
        var sizes: [Int32: Int] = [:]
        // Small passes for 20 s: bulk level first, trickle level after 10 s.
        for step in 0..<40 {
            clock.now = start + .milliseconds(500 * step)
            let pass = StreamCompressionTests.lines(from: first, count: 4, random: &random)
            first += 4
            try compressor.compress(pass, flush: true, into: &output)
            sizes[compressor.currentLevel] = max(sizes[compressor.currentLevel] ?? 0, compressor.contextBytes)
        }
        #expect(sizes.keys.sorted() == [ZstdLevelPolicy.bulkLevel, ZstdLevelPolicy.trickleLevel].sorted())
        // Measured with 2^16-entry tables: 1.17 MB at level 1 (the bulk level), 1.30 MB at 12, 1.4 MB at 3, 2.2 MB
        // at 19 (2^17 and 2^18 entries: 2.4 MB at level 3). The bulk level is the one a draining backlog runs at,
        // beside a full ring.
        for (level, bytes) in sizes { #expect(bytes < 3 << 20, "level \(level): \(bytes) bytes") }
        #expect((sizes[ZstdLevelPolicy.bulkLevel] ?? 0) < 2 << 20, "bulk level: \(sizes[ZstdLevelPolicy.bulkLevel] ?? 0) bytes")
    }
}

/// A clock the test moves by hand.
private final class ManualClock: @unchecked Sendable {
    var now: ContinuousClock.Instant
    init(_ start: ContinuousClock.Instant) { now = start }
}
