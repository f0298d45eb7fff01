#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The memory behind a `RecordRing`: one anonymous mapping of `capacity` bytes whose pages the system lends only
/// while frames need them.
///
/// The mapping is reserved, not committed: a page costs memory from the first write into it. The ring's storage is
/// split into chunks (a power of two of at least one page, at most 1 MiB, at least 16 per ring). When the oldest
/// retained frame moves out of a chunk and the chunk lies wholly in the free part of the ring, its pages are handed
/// back with `madvise(MADV_DONTNEED)`; the next write into it starts from fresh zero pages. So an agent whose
/// collector keeps up holds a chunk or two of its ring, and the ring still grows to its full capacity during an
/// outage.
///
/// Memory is handed back only while the ring is slow: while the writer takes longer than `slowLap` to go round the
/// whole ring (10 s by default: below 6.4 MiB/s for the default 64 MiB). A fast ring would write into the chunk again
/// within moments, and every page handed back would cost a page fault and a zeroed page on the next lap
/// (docs/configuration.md, `buffer.max_bytes`). A ring that speeds up keeps its pages after one lap; one that slows
/// down gives them back over the next lap. A free chunk close ahead of the write position is kept too: the writer is
/// about to use it.
///
/// Chunks the oldest frame left while the ring was fast are remembered: the first release once the ring is slow
/// again hands back every free chunk, not just the ones the oldest frame is leaving, so the memory of a burst does not
/// wait a whole slow lap (at 100 lines/s, most of an hour for the default ring). A ring that goes quiet after a burst
/// writes nothing that would measure its lap; its owner calls `releaseAllFree` then (the uplink does when it has
/// been idle for a heartbeat interval, the agent when it starts shutting down).
///
/// The mapping never gets transparent huge pages (`MADV_NOHUGEPAGE`): a chunk is smaller than a huge page, and
/// the kernel would fill what was handed back (see `map()`).
///
/// Not thread-safe: the ring calls it with its lock held, which is also what keeps a chunk from being written while
/// it is handed back.
struct RingMemory: Sendable {
    /// Usable bytes (the mapping is rounded up to whole pages).
    let capacity: Int
    private let mappedBytes: Int
    /// log2 of the chunk size; 0 when the ring is too small to hand anything back.
    private let chunkShift: Int
    /// Whether each chunk may hold pages written since it was last handed back.
    private var touched: [Bool]
    /// Free chunks closer than this ahead of the write position are kept.
    private let keepAheadBytes: Int
    /// Memory is handed back only while a lap of the writer takes at least this long.
    private let slowLap: Duration
    /// The chunk the last frame was written into; -1 before the first.
    private var writerChunk = -1
    /// When the writer last entered each chunk.
    private var enteredAt: [ContinuousClock.Instant?]
    /// How long the writer's last lap took, measured when it entered a chunk again; nil before its first lap.
    private var lastLap: Duration?
    /// Free chunks were kept because the ring was fast: the next release while it is slow sweeps every free chunk.
    private var keptWhileFast = false

    /// Largest chunk handed back at once.
    static let maximumChunkBytes = 1 << 20
    /// A ring is split into at least this many chunks, so a small ring can still give memory back.
    static let minimumChunks = 16
    /// Free chunks within this many chunks ahead of the writer are kept.
    static let chunksKeptAhead = 2

    /// Handing memory back while the writer's lap takes at least 10 s.
    static let defaultSlowLap = Duration.seconds(10)

    /// Plans the memory of a ring of `capacity` bytes; `map()` reserves it.
    init(capacity: Int, slowLap: Duration = Self.defaultSlowLap) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let pageBytes = page > 0 ? page : 4096
        self.capacity = capacity
        self.mappedBytes = (capacity + pageBytes - 1) / pageBytes * pageBytes
        var chunk = Self.maximumChunkBytes
        while chunk > pageBytes && capacity / chunk < Self.minimumChunks { chunk >>= 1 }
        if chunk >= pageBytes && capacity / chunk >= 2 {
            self.chunkShift = chunk.trailingZeroBitCount
            self.touched = Array(repeating: false, count: (capacity + chunk - 1) / chunk)
        } else {
            self.chunkShift = 0
            self.touched = []
        }
        self.keepAheadBytes = Self.chunksKeptAhead << chunkShift
        self.slowLap = slowLap
        self.enteredAt = Array(repeating: nil, count: touched.count)
    }

    /// Reserves the storage: `capacity` bytes, zero, costing memory only where written. Traps when the system
    /// refuses (the configuration bounds the size to what fits the machine).
    func map() -> UnsafeMutableRawPointer {
        let mapped = mmap(nil, mappedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        guard let mapped, mapped != MAP_FAILED else {
            fatalError("RecordRing: cannot reserve \(capacity) bytes of address space (errno \(errno))")
        }
        #if os(Linux)
        // With transparent huge pages set to `always` (the default of many distributions' kernels), a write would
        // fault in 2 MiB at once and khugepaged would merge a chunk handed back with its neighbours' pages into a
        // huge page again (any 2 MiB with one page in use qualifies by default), so the ring's memory would creep
        // back toward its capacity. The ring is written and read once per lap, in order: huge pages save it nothing.
        _ = madvise(mapped, mappedBytes, MADV_NOHUGEPAGE)
        #endif
        return mapped
    }

    /// Unmaps the storage that `map()` returned; the ring calls it once, from its `deinit`.
    func unmap(_ base: UnsafeMutableRawPointer) {
        munmap(base, mappedBytes)
    }

    /// Notes that `count` bytes were written at `offset` (wrapping at `capacity`).
    @inline(__always)
    mutating func noteWritten(at offset: Int, count: Int) {
        guard chunkShift > 0, count > 0 else { return }
        let first = offset >> chunkShift
        let lastOffset = offset + count - 1
        let last = (lastOffset < capacity ? lastOffset : lastOffset - capacity) >> chunkShift
        if first == writerChunk && last == writerChunk { return }
        enter(from: first, through: last)
    }

    /// The writer moved into new chunks: marks them and measures how long its lap took.
    private mutating func enter(from first: Int, through last: Int) {
        let now = ContinuousClock.now
        var chunk = first
        while true {
            touched[chunk] = true
            if chunk != writerChunk {
                if let previous = enteredAt[chunk] { lastLap = previous.duration(to: now) }
                enteredAt[chunk] = now
            }
            if chunk == last { break }
            chunk = chunk + 1 == touched.count ? 0 : chunk + 1
        }
        writerChunk = last
    }

    /// Hands back the chunks the oldest frame moved out of.
    ///
    /// - Parameters:
    ///   - oldHead: Where the oldest retained frame started before frames were released.
    ///   - released: How many bytes were released from there.
    ///   - tail: Where the next frame will be written.
    ///   - used: Bytes still held by frames (from the new head to `tail`).
    mutating func release(from oldHead: Int, released: Int, tail: Int, used: Int, in base: UnsafeMutableRawPointer) {
        guard chunkShift > 0, released > 0 else { return }
        if let lastLap, lastLap < slowLap {
            keptWhileFast = true
            return
        }
        if keptWhileFast {
            releaseAllFree(tail: tail, used: used, in: base)
            return
        }
        var offset = oldHead
        var remaining = released
        while remaining > 0 {
            let chunk = offset >> chunkShift
            let chunkEnd = min((chunk + 1) << chunkShift, capacity)
            let toEnd = chunkEnd - offset
            guard remaining >= toEnd else { break }
            remaining -= toEnd
            offset = chunkEnd == capacity ? 0 : chunkEnd
            releaseIfFree(chunk, tail: tail, free: capacity - used, in: base)
        }
    }

    /// Hands back every chunk that lies wholly in the free region, except those just ahead of the writer, however
    /// fast the ring is.
    ///
    /// - Parameters:
    ///   - tail: Where the next frame will be written.
    ///   - used: Bytes held by frames.
    mutating func releaseAllFree(tail: Int, used: Int, in base: UnsafeMutableRawPointer) {
        guard chunkShift > 0 else { return }
        keptWhileFast = false
        for chunk in touched.indices { releaseIfFree(chunk, tail: tail, free: capacity - used, in: base) }
    }

    private mutating func releaseIfFree(_ chunk: Int, tail: Int, free: Int, in base: UnsafeMutableRawPointer) {
        guard touched[chunk] else { return }
        let chunkStart = chunk << chunkShift
        let chunkEnd = min(chunkStart + (1 << chunkShift), capacity)
        // The chunk must lie wholly in the free region [tail, tail + free), and not just ahead of the writer.
        let ahead = chunkStart >= tail ? chunkStart - tail : chunkStart + capacity - tail
        if ahead >= keepAheadBytes && ahead + (chunkEnd - chunkStart) <= free {
            madvise(base + chunkStart, chunkEnd - chunkStart, MADV_DONTNEED)
            touched[chunk] = false
        }
    }

    /// Bytes of the storage that are in memory now, as the kernel reports them (`mincore(2)`); nil if it cannot
    /// tell.
    func residentBytes(of base: UnsafeMutableRawPointer) -> Int? {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard page > 0 else { return nil }
        let pages = mappedBytes / page
        var vector = [UInt8](repeating: 0, count: pages)
        let result = vector.withUnsafeMutableBufferPointer { mincore(base, mappedBytes, $0.baseAddress) }
        guard result == 0 else { return nil }
        return vector.reduce(0) { $0 + Int($1 & 1) } * page
    }
}
