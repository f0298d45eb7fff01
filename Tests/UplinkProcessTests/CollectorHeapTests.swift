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
        func isMapped(_ bytes: Int) -> Bool {
            let block = malloc(bytes)!
            defer { free(block) }
            return block.load(fromByteOffset: -MemoryLayout<Int>.size, as: Int.self) & 2 != 0
        }
        #expect(!isMapped(2 << 20), "below the 4 MiB mmap threshold")
        #expect(isMapped(8 << 20), "above it: the threshold is fixed, not raised by earlier frees")
    }
    #endif
}
