/// Keeps only the tail of an append-only file in the page cache.
///
/// The collector writes its records once and reads them back, if at all, right behind the writer (forwarders,
/// `tail -f`). Left to the kernel, every written page would stay cached until memory runs short: a collector storing
/// 300 MiB/s would fill the page cache within a minute, pushing out what other programs use, and every new page would
/// be a fresh allocation (on a virtual machine, often a fresh page from the host, which costs more CPU than the copy
/// itself; docs/architecture.md, the write-ahead log's "Page cache"). So, as the file grows:
///
/// - every `stepBytes` of new whole pages, their writeback is started without waiting (`sync_file_range`), in steps
///   that large, not per write, so a slow trickle of records is not written to the device once per write;
/// - pages more than `tailBytes` behind the end are, once written back, dropped from the page cache
///   (`POSIX_FADV_DONTNEED`). Their writeback was started `tailBytes` earlier, so waiting for it normally costs
///   nothing; when the device is slower than the records arrive, the wait holds back the storage thread (and so the
///   acknowledgements) instead of letting dirty pages pile up in memory.
///
/// The file's content, its durability and what an acknowledgement means do not change: `fsync` still decides when
/// writes reach the device before they are acknowledged; this only decides what stays in memory afterwards.
struct PageCacheTail: Equatable {
    /// How much of the file's end stays cached, in bytes.
    let tailBytes: Int64
    /// How many bytes of new pages make one writeback step, and one drop step.
    let stepBytes: Int64
    /// Writeback has been started for everything before this offset.
    private var writebackStartedUpTo: Int64
    /// Everything before this offset has been dropped from the cache (bar the folios `dropSlackBytes` catches).
    private var droppedUpTo: Int64

    /// The default: 32 MiB of tail, in 4 MiB steps.
    static let defaultTailBytes: Int64 = 32 << 20
    static let defaultStepBytes: Int64 = 4 << 20
    /// The kernel keeps a cached folio that lies partly outside the range it is asked to drop, and a large folio can
    /// straddle the previous drop's end; each drop therefore reaches back this far (more than the largest page-cache
    /// folio) so such a folio is dropped by the next one.
    private static let dropSlackBytes: Int64 = 8 << 20
    /// The system's page size (4 KiB on x86-64; 16 KiB on a Raspberry Pi 5's kernel), which the hints work in.
    private static let pageBytes = FileIO.pageBytes

    /// For a file opened for appending; what it already holds is dropped from the cache once it grows by a step.
    init(tailBytes: Int64 = defaultTailBytes, stepBytes: Int64 = defaultStepBytes) {
        self.tailBytes = tailBytes
        self.stepBytes = stepBytes
        self.writebackStartedUpTo = 0
        self.droppedUpTo = 0
    }

    /// Whether `fileGrew(to: size)` would start a writeback or wait for one (a step boundary is crossed), which
    /// can wait for the device; between steps it does nothing.
    func actsOnGrowth(to size: Int64) -> Bool {
        if size < writebackStartedUpTo || size < droppedUpTo { return false }
        let wholePages = size & ~(PageCacheTail.pageBytes - 1)
        let dropEnd = (size - tailBytes) & ~(PageCacheTail.pageBytes - 1)
        return wholePages - writebackStartedUpTo >= stepBytes || dropEnd - droppedUpTo >= stepBytes
    }

    /// Called after the file (descriptor `fd`) has grown to `size` bytes.
    mutating func fileGrew(to size: Int64, descriptor fd: Int32) {
        if size < writebackStartedUpTo || size < droppedUpTo {
            // Truncated behind the writer's back (say, by logrotate's copytruncate): start over.
            writebackStartedUpTo = 0
            droppedUpTo = 0
        }
        let wholePages = size & ~(PageCacheTail.pageBytes - 1)
        if wholePages - writebackStartedUpTo >= stepBytes {
            FileIO.startWriteback(fd, offset: writebackStartedUpTo, count: wholePages - writebackStartedUpTo)
            writebackStartedUpTo = wholePages
        }
        let dropEnd = (size - tailBytes) & ~(PageCacheTail.pageBytes - 1)
        guard dropEnd - droppedUpTo >= stepBytes else { return }
        let from = max(0, droppedUpTo - PageCacheTail.dropSlackBytes)
        FileIO.finishWriteback(fd, offset: from, count: dropEnd - from)
        FileIO.dropCachedPages(fd, offset: from, count: dropEnd - from)
        droppedUpTo = dropEnd
    }
}
