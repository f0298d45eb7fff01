#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension DiskSource {
    /// The figures of one file system, in bytes and inodes.
    struct Usage: Sendable, Equatable {
        var total: UInt64
        var free: UInt64
        var used: UInt64
        /// `used / (used + free) × 100`; `nil` when both are 0.
        var usedPercent: Double?
        var inodesTotal: UInt64
        var inodesFree: UInt64
        var inodesUsed: UInt64

        /// From `statvfs` fields: block counts in units of `fragmentSize`.
        init(
            fragmentSize: UInt64, blocks: UInt64, blocksFree: UInt64, blocksAvailable: UInt64, files: UInt64,
            filesFree: UInt64
        ) {
            func bytes(_ count: UInt64) -> UInt64 {
                let (value, overflow) = count.multipliedReportingOverflow(by: fragmentSize)
                return overflow ? .max : value
            }
            total = bytes(blocks)
            free = bytes(blocksAvailable)
            used = bytes(blocks > blocksFree ? blocks - blocksFree : 0)
            let denominator = Double(used) + Double(free)
            usedPercent = denominator > 0 ? Double(used) / denominator * 100 : nil
            inodesTotal = files
            inodesFree = filesFree
            inodesUsed = files > filesFree ? files - filesFree : 0
        }
    }

    /// `statvfs(path)`, or the `errno` it failed with.
    static func usage(of path: String) -> Result<Usage, SourceFiles.Errno> {
        var result = statvfs()
        guard statvfs(path, &result) == 0 else { return .failure(SourceFiles.Errno(errno)) }
        let fragmentSize = UInt64(result.f_frsize) > 0 ? UInt64(result.f_frsize) : UInt64(result.f_bsize)
        return .success(Usage(
            fragmentSize: fragmentSize, blocks: UInt64(result.f_blocks), blocksFree: UInt64(result.f_bfree),
            blocksAvailable: UInt64(result.f_bavail), files: UInt64(result.f_files), filesFree: UInt64(result.f_ffree)))
    }
}
