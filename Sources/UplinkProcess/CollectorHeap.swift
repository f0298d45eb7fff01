import CLinuxIO
import Logging

#if canImport(Glibc)
import Glibc
#endif

/// The C allocator's thresholds for `uplink collector`, whose memory comes and goes in bursts.
///
/// The collector decodes a stream into 256 KiB pieces on its event loop and frees them on the storage thread a few
/// milliseconds later, many at once. With glibc's defaults each such free leaves more than the trim threshold free at
/// the top of the loop's arena, the arena gives it back to the kernel, and the next pieces fault the same pages in
/// again, zeroed: in a bulk transfer that was about a tenth of the collector's CPU (docs/architecture.md, "Bulk").
/// Keeping up to `trimThresholdBytes` of freed memory for reuse removes it; the price is that the collector's
/// resident memory stays near its peak after a burst instead of falling back. The agent keeps glibc's defaults: on an
/// edge box its memory matters more than the collector's CPU.
///
/// An operator who set glibc's own malloc tunables (`GLIBC_TUNABLES=glibc.malloc.…`) keeps them: nothing is
/// changed then. Elsewhere than glibc this does nothing.
public enum CollectorHeap {
    /// Free memory an arena keeps at its top instead of handing it back: 64 MiB.
    public static let trimThresholdBytes = 64 << 20
    /// Allocations from this size on get a mapping of their own: 4 MiB. Setting it also stops glibc from moving both
    /// thresholds by itself (it would set the trim threshold to twice the largest mapping freed).
    public static let mmapThresholdBytes = 4 << 20

    /// What `keepFreedMemory` did.
    public enum Outcome: Sendable, Equatable {
        /// The thresholds are set.
        case applied
        /// `GLIBC_TUNABLES` sets malloc tunables: left as the operator chose.
        case leftToTunables
        /// Not glibc, or glibc refused a value.
        case unavailable
    }

    /// Sets both thresholds for this process (see the type), unless `GLIBC_TUNABLES` sets malloc tunables.
    @discardableResult
    public static func keepFreedMemory(logger: Logger) -> Outcome {
        #if canImport(Glibc)
        if let tunables = getenv("GLIBC_TUNABLES").map({ String(cString: $0) }), tunables.contains("glibc.malloc.") {
            logger.debug("Malloc thresholds left to GLIBC_TUNABLES", metadata: ["GLIBC_TUNABLES": "\(tunables)"])
            return .leftToTunables
        }
        guard uplink_set_malloc_thresholds(Int32(mmapThresholdBytes), Int32(trimThresholdBytes)) == 1 else {
            logger.debug("glibc refused the collector's malloc thresholds")
            return .unavailable
        }
        return .applied
        #else
        return .unavailable
        #endif
    }
}
