#if canImport(Glibc)
import Glibc
#endif
import Testing
import UplinkTestSupport

@testable import UplinkCore
// `SmapsMapping`: the kernel's view of the ring's mapping.
@testable import UplinkProcess

/// The ring gives the memory of acknowledged regions back to the system (as the kernel's `mincore` reports it)
/// and still keeps every retained byte.
extension RecordRingTests {
    private static let mebibyte = 1 << 20

    @Test func aRingCostsNoMemoryBeforeItIsWritten() throws {
        let ring = RecordRing(capacity: 64 * Self.mebibyte)
        let resident = try #require(ring.residentBytes())
        #expect(resident == 0)
    }

    #if os(Linux)
    /// Under transparent huge pages `always`, khugepaged would refill a 2 MiB region around a chunk handed back as
    /// soon as one of its pages is in use again; the mapping must say `nh` whatever the system's setting.
    @Test(
        .enabled(
            if: access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0,
            "a kernel without transparent huge pages has no `nh` flag to set"))
    func theRingsStorageNeverGetsTransparentHugePages() throws {
        let ring = RecordRing(capacity: 16 * Self.mebibyte)
        let source = ring.registerSource("s")
        ring.append(pattern(2, count: 4000), source: source)
        let start = UInt(bitPattern: ring.storage)
        // The mapping that holds the storage: the kernel merges it with a neighbour that has the same flags (another
        // ring allocated by a test running in parallel), so it may start below the storage.
        let mapping = try #require(StartupCodePages.currentMappings().get().first { $0.start <= start && start < $0.end })
        #expect(mapping.end - start >= UInt(16 * Self.mebibyte))
        #expect(mapping.vmFlags.contains("nh"), "VmFlags: \(mapping.vmFlags.joined(separator: " "))")
    }
    #endif

    @Test func anUnacknowledgedBacklogFillsTheWholeCapacity() throws {
        let capacity = 16 * Self.mebibyte
        let ring = RecordRing(capacity: capacity)
        let source = ring.registerSource("s")
        let frame = pattern(1, count: 4000)
        while ring.statistics().usedBytes + header + frame.count <= capacity {
            ring.append(frame, source: source)
        }
        let resident = try #require(ring.residentBytes())
        #expect(resident >= capacity - 2 * header - 2 * frame.count)

        // Everything acknowledged at once: all but the chunks at and just ahead of the writer go back.
        ring.acknowledge(through: ring.statistics().nextToWrite - 1)
        let afterAcknowledgement = try #require(ring.residentBytes())
        #expect(afterAcknowledgement <= 4 * Self.mebibyte, "\(afterAcknowledgement) bytes still resident")
    }

    @Test(.computeBound) func aCollectorThatKeepsUpLeavesOnlyAFewChunksResident() throws {
        let capacity = 16 * Self.mebibyte
        // Laps here take milliseconds: release regardless of speed, as a slow ring would.
        let ring = RecordRing(capacity: capacity, memoryReleaseLap: .zero)
        let source = ring.registerSource("s")
        var peak = 0
        let patterns = (0..<256).map { pattern($0, count: 300) }
        // Three laps of 300-byte frames, each acknowledged soon after it was written (a backlog of <= 100 frames).
        for index in 0..<(3 * capacity / 308) {
            ring.append(patterns[index % 256], source: source)
            if index % 100 == 99 {
                let frames = readUnsent(ring)
                #expect(frames.allSatisfy { $0.bytes == patterns[Int($0.sequence - 1) % 256] })
                ring.acknowledge(through: frames.last?.sequence ?? 0)
            }
            if index % 5000 == 0 { peak = max(peak, try #require(ring.residentBytes())) }
        }
        let resident = try #require(ring.residentBytes())
        #expect(resident <= 4 * Self.mebibyte, "\(resident) bytes resident after three laps")
        #expect(peak <= 4 * Self.mebibyte, "peak \(peak) bytes resident")
    }

    /// Appends and at once acknowledges `count` frames of 4,000 bytes: in a few milliseconds, far faster than any
    /// release lap these tests use.
    private func writeAndAcknowledge(_ count: Int, into ring: RecordRing, _ source: SourceID) {
        let frame = pattern(3, count: 4000)
        for _ in 0..<count {
            if case .appended(let sequence) = ring.append(frame, source: source) { ring.acknowledge(through: sequence) }
        }
    }

    /// Frames of 4,000 bytes that fill `capacity` three times.
    private func threeLaps(_ capacity: Int) -> Int { 3 * capacity / (header + 4000) }

    @Test func aFastRingKeepsItsMemoryAfterItsFirstLap() throws {
        let capacity = 16 * Self.mebibyte
        let ring = RecordRing(capacity: capacity, memoryReleaseLap: .seconds(3600))
        // Three laps: the first gives memory back (no lap measured yet), the later ones are faster than the
        // threshold, so the ring keeps what it wrote.
        writeAndAcknowledge(threeLaps(capacity), into: ring, ring.registerSource("s"))
        let resident = try #require(ring.residentBytes())
        #expect(resident >= capacity - 4 * Self.mebibyte, "\(resident) bytes resident")
    }

    @Test(.computeBound) func aRingThatWentQuietGivesItsMemoryBackWhenAsked() throws {
        let capacity = 16 * Self.mebibyte
        let ring = RecordRing(capacity: capacity, memoryReleaseLap: .seconds(3600))
        let source = ring.registerSource("s")
        writeAndAcknowledge(threeLaps(capacity), into: ring, source)
        // Fast laps keep the pages (as above); the uplink asks once it has been idle, the agent when it stops.
        #expect(try #require(ring.residentBytes()) >= capacity - 4 * Self.mebibyte)
        ring.releaseFreeMemory()
        let resident = try #require(ring.residentBytes())
        #expect(resident <= 4 * Self.mebibyte, "\(resident) bytes resident after releaseFreeMemory")

        // Frames written afterwards, across the given-back chunks, read back as written.
        let later = (0..<2000).map { pattern(100 + $0, count: 1000 + $0 % 3000) }
        for frame in later { ring.append(frame, source: source) }
        #expect(readUnsent(ring).map(\.bytes) == later)
    }

    @Test func aRingThatSlowsDownAfterABurstGivesBackEveryFreeChunk() async throws {
        let capacity = 16 * Self.mebibyte
        let ring = RecordRing(capacity: capacity, memoryReleaseLap: .milliseconds(300))
        let source = ring.registerSource("s")
        writeAndAcknowledge(threeLaps(capacity), into: ring, source)  // a burst
        try await Task.sleep(for: .milliseconds(400))
        // Then a trickle through two chunks: the writer's next lap measures slow, and the first release after that
        // sweeps the whole free ring, not just the chunk the oldest frame left (which would leave the burst's pages
        // for a full lap).
        writeAndAcknowledge(2 * Self.mebibyte / (header + 4000) + 2, into: ring, source)
        let resident = try #require(ring.residentBytes())
        #expect(resident <= 4 * Self.mebibyte, "\(resident) bytes resident after the ring slowed down")
    }

    /// Random frame sizes and acknowledgement patterns on a ring small enough to be handed back chunk by chunk
    /// (64 KiB: 16 chunks of one 4 KiB page): every frame reads back exactly as written, so no page that held a
    /// retained byte was ever given back.
    @Test(.computeBound, arguments: 1...6 as ClosedRange<UInt64>)
    func framesSurviveTheirNeighboursBeingGivenBack(seed: UInt64) {
        var random = SplitMix64(seed: seed &* 0x5DEE_CE66)
        let capacity = 64 * 1024 + Int(seed) * 40  // not always a whole number of pages
        let ring = RecordRing(capacity: capacity, policy: .dropNewest, memoryReleaseLap: .zero)
        let source = ring.registerSource("s")
        var retained: [(sequence: UInt64, bytes: [UInt8])] = []
        var nextSequence: UInt64 = 1
        for step in 0..<20_000 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                let size = random.next() % 8 == 0 ? Int.random(in: 0...9000, using: &random) : Int.random(in: 0...300, using: &random)
                let frame = pattern(step, count: size)
                if case .appended(let sequence) = ring.append(frame, source: source) {
                    #expect(sequence == nextSequence)
                    retained.append((sequence, frame))
                    nextSequence += 1
                }
            case 6..<8:
                for frame in readUnsent(ring) {
                    let expected = retained.first { $0.sequence == frame.sequence }
                    #expect(frame.bytes == expected?.bytes, "seed \(seed) step \(step) frame \(frame.sequence)")
                }
            case 8:
                ring.rewindToAcknowledged()
            default:
                guard !retained.isEmpty else { continue }
                // Usually most of the backlog, sometimes all of it.
                let keep = random.next() % 3 == 0 ? 0 : Int.random(in: 0...min(3, retained.count), using: &random)
                guard keep < retained.count else { continue }
                ring.acknowledge(through: retained[retained.count - keep - 1].sequence)
                retained.removeFirst(retained.count - keep)
            }
        }
        ring.rewindToAcknowledged()
        #expect(readUnsent(ring).map(\.bytes) == retained.map(\.bytes))
    }
}
