import Foundation
import Logging
import Testing
import UplinkCore
import UplinkPersistentBuffer
import UplinkTestSupport

/// The persistent buffer (`buffer.persist`) with the ring, on real files in a temporary directory: frames moved to
/// disk and read back in order, restarts that continue the numbering and epoch, torn and damaged segments, and the
/// disk budget.
@Suite("PersistentBuffer")
struct PersistentBufferTests {
    static let logger = Logger(label: "uplink.test.persist")

    func directory(_ name: String) throws -> String {
        try TestDirectories.make("uplink-persist-\(name)")
    }

    func open(
        _ directory: String, mode: PersistentBufferSettings.Mode = .spill, maxBytes: Int = 1 << 20,
        overflow: OverflowPolicy = .dropOldest, capacity: Int = 4096, epoch: UInt64 = 77
    ) throws -> RecordRing {
        let settings = PersistentBufferSettings(directory: directory, maxBytes: maxBytes, mode: mode, overflow: overflow)
        let buffer = try PersistentBuffer.open(settings, proposedEpoch: epoch, logger: Self.logger)
        return RecordRing(capacity: capacity, policy: overflow, memoryReleaseLap: .zero, persistentBuffer: buffer)
    }

    /// Reads every unsent frame, in calls of at most `maxBytes`.
    func drain(_ ring: RecordRing, maxBytes: Int = 1000) -> [ReadFrame] {
        var frames: [ReadFrame] = []
        for _ in 0..<100_000 {
            let batch = readUnsent(ring, maxBytes: maxBytes)
            if batch.isEmpty { break }
            frames += batch
        }
        #expect(!ring.hasUnsentFrames)
        return frames
    }

    func segments(_ directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".seg") }.sorted()
    }

    func diskBytes(_ directory: String) throws -> Int {
        try segments(directory).reduce(0) {
            $0 + ((try FileManager.default.attributesOfItem(atPath: directory + "/" + $1)[.size] as? Int) ?? 0)
        }
    }

    @Test func crc32cMatchesTheStandardCheckValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
    }

    @Test("A full ring moves its oldest frames to disk; they are sent first, in order, nothing lost")
    func overflowGoesToDisk() throws {
        let path = try directory("overflow")
        let ring = try open(path)
        let source = ring.registerSource("s")
        for index in 0..<200 { #expect(ring.append(pattern(index, count: 100), source: source) == .appended(sequence: UInt64(index + 1))) }
        let statistics = ring.statistics()
        #expect(statistics.retainedFrames < 200, "the 4 KiB ring cannot hold 200 frames of 100 bytes")
        #expect(statistics.sources[0].droppedOldest == 0)
        let frames = drain(ring)
        #expect(frames.map(\.sequence) == Array(1...200))
        #expect(frames.map(\.bytes) == (0..<200).map { pattern($0, count: 100) })
        #expect(!ring.isEmpty)
        ring.acknowledge(through: 200)
        #expect(ring.isEmpty)
    }

    /// The age a status shows is read from the oldest frame's prefix: once the ring moved the oldest unacknowledged
    /// frames to disk, that is the oldest on disk, not the oldest in memory.
    @Test("The oldest unacknowledged frame is found on disk when the ring moved it there", arguments: [
        PersistentBufferSettings.Mode.spill, .always,
    ])
    func oldestFrameOnDisk(mode: PersistentBufferSettings.Mode) throws {
        let path = try directory("oldest-\(mode)")
        let ring = try open(path, mode: mode)
        let source = ring.registerSource("s")
        for index in 0..<200 { ring.append(pattern(index, count: 100), source: source) }
        let inMemory = ring.statistics().oldestRetained
        #expect(inMemory > 1, "the 4 KiB ring moved its oldest frames to disk")
        #expect(ring.oldestFramePrefix(maxBytes: 8) == Array(pattern(0, count: 100).prefix(8)))
        #expect(ring.statistics(oldestPrefixBytes: 8).oldestFramePrefix == Array(pattern(0, count: 100).prefix(8)))
        // Acknowledged part way into the frames on disk: the next one after the acknowledgement.
        ring.acknowledge(through: 10)
        #expect(ring.oldestFramePrefix(maxBytes: 100) == pattern(10, count: 100))
        // Everything on disk acknowledged: the oldest in memory.
        ring.acknowledge(through: inMemory - 1)
        #expect(ring.oldestFramePrefix(maxBytes: 100) == pattern(Int(inMemory) - 1, count: 100))
        // Reading the oldest for a status does not disturb sending: every unacknowledged frame goes out, in order.
        #expect(drain(ring).map(\.sequence) == Array(inMemory...200))
        ring.acknowledge(through: 200)
        #expect(ring.oldestFramePrefix(maxBytes: 8) == nil)
    }

    @Test("A clean restart keeps the epoch and numbering and sends what was unacknowledged")
    func cleanRestartContinuesTheStream() throws {
        let path = try directory("restart")
        do {
            let ring = try open(path, epoch: 1234)
            let source = ring.registerSource("s")
            for index in 0..<30 { ring.append(pattern(index, count: 50), source: source) }
            _ = drain(ring)
            ring.acknowledge(through: 10)
            ring.closePersistentBuffer()
            #expect(ring.persistentStatistics()?.epoch == 1234)
        }
        let settings = PersistentBufferSettings(directory: path, maxBytes: 1 << 20)
        let buffer = try PersistentBuffer.open(settings, proposedEpoch: 999, logger: Self.logger)
        #expect(buffer.epoch == 1234)
        #expect(buffer.nextSequence == 31)
        #expect(buffer.statistics.previousShutdownClean)
        let ring = RecordRing(capacity: 4096, persistentBuffer: buffer)
        let source = ring.registerSource("s")
        #expect(ring.append(pattern(30, count: 50), source: source) == .appended(sequence: 31))
        // The collector says it has 10: everything after it is sent again, once.
        #expect(ring.resume(collectorHas: 10) == 11)
        let frames = drain(ring, maxBytes: 120)
        #expect(frames.map(\.sequence) == Array(11...31))
        #expect(frames.map(\.bytes) == (10...30).map { pattern($0, count: 50) })
        ring.acknowledge(through: 31)
        #expect(ring.isEmpty)
    }

    @Test("Spill mode writes nothing until frames wait unacknowledged; then only those")
    func spillWritesOnlyWaitingFrames() throws {
        let path = try directory("spill")
        let ring = try open(path, capacity: 1 << 16)
        let source = ring.registerSource("s")
        for index in 0..<20 { ring.append(pattern(index, count: 40), source: source) }
        _ = drain(ring)
        ring.acknowledge(through: 20)
        #expect(ring.persistentStatistics()?.bytesWritten == 0)
        for index in 20..<40 { ring.append(pattern(index, count: 40), source: source) }
        #expect(ring.spillUnacknowledged(below: 31) == 10)
        #expect(ring.persistentStatistics()?.framesWritten == 10)
        #expect(ring.spillUnacknowledged(below: 31) == 0)
        ring.acknowledge(through: 40)
        #expect(ring.isEmpty)
    }

    @Test("A crash in spill mode continues above the reserved sequences, same epoch")
    func spillCrashSkipsTheReservation() throws {
        let path = try directory("spill-crash")
        do {
            let ring = try open(path, epoch: 5)
            let source = ring.registerSource("s")
            for index in 0..<10 { ring.append(pattern(index, count: 40), source: source) }
            ring.spillUnacknowledged(below: 6)
            // No close: the process died.
        }
        let ring = try open(path, epoch: 6)
        #expect(ring.persistentStatistics()?.epoch == 5)
        #expect(ring.persistentStatistics()?.previousShutdownClean == false)
        let next = ring.nextSequence
        #expect(next == 1 + PersistentBuffer.reservationBlock)
        let frames = drain(ring)
        #expect(frames.map(\.sequence) == Array(1...5), "what was spilled before the crash is sent")
    }

    @Test("A crash in always mode loses nothing appended and continues right after it, placeholders included")
    func alwaysCrashIsExact() async throws {
        let path = try directory("always-crash")
        do {
            let ring = try open(path, mode: .always, epoch: 9)
            let sensor = ring.registerSource("sensor")
            let tail = ring.registerSource("tail")
            for index in 0..<50 {
                if index % 5 == 0 {
                    _ = await ring.appendWaitingForSpace(pattern(index, count: 30), source: tail)
                } else {
                    ring.append(pattern(index, count: 30), source: sensor)
                }
            }
            ring.syncPersistentBuffer()
        }
        let ring = try open(path, mode: .always, epoch: 10)
        #expect(ring.persistentStatistics()?.epoch == 9)
        #expect(ring.nextSequence == 51)
        let frames = drain(ring)
        let sensorIndices = (0..<50).filter { $0 % 5 != 0 }
        #expect(frames.map(\.sequence) == sensorIndices.map { UInt64($0 + 1) }, "tail frames are not resent: the tailer rereads them")
        #expect(frames.map(\.bytes) == sensorIndices.map { pattern($0, count: 30) })
    }

    @Test("A segment cut mid-frame: the torn tail is cut off and counted, every whole frame is delivered")
    func tornTailIsCut() throws {
        let path = try directory("torn")
        do {
            let ring = try open(path, mode: .always)
            let source = ring.registerSource("s")
            for index in 0..<40 { ring.append(pattern(index, count: 64), source: source) }
        }
        let segment = path + "/" + (try #require(try segments(path).last))
        let size = try #require(try FileManager.default.attributesOfItem(atPath: segment)[.size] as? Int)
        #expect(truncate(segment, off_t(size - 30)) == 0)
        let ring = try open(path, mode: .always)
        #expect(ring.persistentStatistics()?.tornTails == 1)
        #expect(ring.persistentStatistics()?.corruptRegions == 0)
        #expect(ring.nextSequence == 40, "sequence 40 was never written whole; it is assigned again")
        let frames = drain(ring)
        #expect(frames.map(\.sequence) == Array(1...39))
        #expect(frames.map(\.bytes) == (0..<39).map { pattern($0, count: 64) })
    }

    @Test("Flipped bytes inside segments: the damaged frames are skipped and counted, the rest delivered in order")
    func flippedBytesAreDetected() throws {
        let path = try directory("flipped")
        do {
            let ring = try open(path, mode: .always)
            let source = ring.registerSource("s")
            for index in 0..<100 { ring.append(pattern(index, count: 64), source: source) }
            ring.closePersistentBuffer()
        }
        let segment = path + "/" + (try #require(try segments(path).first))
        let handle = try #require(FileHandle(forUpdatingAtPath: segment))
        let frameBytes = 24 + 64
        // Frame 11 (index 10): a body byte; frame 51: its length field; frame 81: its sequence number.
        for offset in [10 * frameBytes + 40, 50 * frameBytes + 5, 80 * frameBytes + 9] {
            try handle.seek(toOffset: UInt64(offset))
            let byte = try #require(try handle.read(upToCount: 1)).first!
            try handle.seek(toOffset: UInt64(offset))
            try handle.write(contentsOf: [byte ^ 0x5A])
        }
        try handle.close()
        let ring = try open(path, mode: .always)
        #expect(ring.persistentStatistics()?.corruptRegions == 3)
        #expect(ring.persistentStatistics()?.restoredFrames == 97)
        #expect(ring.nextSequence == 101)
        let frames = drain(ring, maxBytes: 500)
        let expected = (0..<100).filter { ![10, 50, 80].contains($0) }
        #expect(frames.map(\.sequence) == expected.map { UInt64($0 + 1) })
        #expect(frames.map(\.bytes) == expected.map { pattern($0, count: 64) })
    }

    @Test("A full disk budget drops the oldest frames (counted) and never holds more than the budget", .computeBound)
    func budgetDropsOldest() throws {
        let path = try directory("budget-oldest")
        let budget = 1 << 20
        let ring = try open(path, mode: .always, maxBytes: budget, capacity: 64 << 10)
        let source = ring.registerSource("s")
        for index in 0..<6000 {
            #expect(ring.append(pattern(index, count: 300), source: source) == .appended(sequence: UInt64(index + 1)))
            if index % 500 == 0 { #expect(try diskBytes(path) <= budget) }
        }
        #expect(try diskBytes(path) <= budget)
        let statistics = try #require(ring.persistentStatistics())
        #expect(statistics.framesDropped > 0)
        let frames = drain(ring, maxBytes: 64 << 10)
        // What is left is the newest run of frames, contiguous up to the last; with the dropped ones, all 6000.
        let sequences = frames.map(\.sequence)
        #expect(sequences.last == 6000)
        #expect(sequences == Array(try #require(sequences.first)...6000))
        #expect(frames.count + statistics.framesDropped == 6000)
    }

    @Test("A full disk budget with drop_newest refuses new frames and keeps the old ones", .computeBound)
    func budgetRefusesNewest() throws {
        let path = try directory("budget-newest")
        let budget = 1 << 20
        let ring = try open(path, mode: .always, maxBytes: budget, overflow: .dropNewest, capacity: 64 << 10)
        let source = ring.registerSource("s")
        var appended: [UInt64] = []
        for index in 0..<6000 {
            if case .appended(let sequence) = ring.append(pattern(index, count: 300), source: source) { appended.append(sequence) }
        }
        #expect(try diskBytes(path) <= budget)
        let statistics = ring.statistics()
        #expect(statistics.sources[0].droppedNewest == 6000 - appended.count)
        #expect(appended.count < 6000)
        let frames = drain(ring, maxBytes: 64 << 10)
        #expect(frames.map(\.sequence) == appended)
        #expect(frames.first?.sequence == 1)
    }
}
