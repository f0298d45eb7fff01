import Logging
import Testing
import UplinkProcess

#if canImport(Glibc)
import Glibc
#endif

@Suite("Collector heap thresholds")
struct CollectorHeapTests {
    #if canImport(Glibc)
    @Test("after keepFreedMemory a 2 MiB block comes from the heap and an 8 MiB block gets a mapping of its own")
    func thresholdsApply() throws {
        try #require(getenv("GLIBC_TUNABLES") == nil, "GLIBC_TUNABLES is set: the thresholds are left to it")
        #expect(CollectorHeap.keepFreedMemory(logger: Logger(label: "test")) == .applied)
        // glibc marks a chunk it mapped on its own with bit 1 (IS_MMAPPED) of the size word just before the block.
        func isMapped(_ block: UnsafeMutableRawPointer) -> Bool {
            block.load(fromByteOffset: -MemoryLayout<Int>.size, as: Int.self) & 2 != 0
        }
        let small = malloc(2 << 20)!
        defer { free(small) }
        #expect(!isMapped(small), "below the 4 MiB mmap threshold")
        // With glibc's own (dynamic) threshold, freeing a mapped 16 MiB block would raise it to 16 MiB.
        free(malloc(16 << 20))
        // Freed memory the process kept (the whole suite runs in it, and the thresholds keep up to 64 MiB) may serve a
        // block of any size; of 16 blocks of 8 MiB held at once, those that need new memory get mappings of their own.
        let large = (0..<16).map { _ in malloc(8 << 20)! }
        defer { large.forEach { free($0) } }
        #expect(large.contains(where: isMapped), "above it: the threshold is fixed, not raised by earlier frees")
    }
    #endif
}
