import UplinkCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Upper bounds every numeric setting has, whatever its key: a value above them is an `out_of_range` issue with
/// its position and key path, never an allocation that aborts the process or a number that overflows later.
/// Keys may have tighter bounds of their own (docs/configuration.md, "Limits").
public enum ConfigLimits {
    /// The fixed ceiling of every size (`max_bytes`, `stream_buffer`, `max_line_bytes`, …): 16GiB. Every size
    /// names memory the process allocates.
    public static let maximumSize = 16 << 30

    /// The machine's physical memory in bytes, nil when it cannot be read.
    public static let physicalMemory: Int? = {
        let pages = sysconf(Int32(_SC_PHYS_PAGES))
        let pageSize = sysconf(Int32(_SC_PAGESIZE))
        guard pages > 0, pageSize > 0 else { return nil }
        let (bytes, overflow) = pages.multipliedReportingOverflow(by: pageSize)
        return overflow ? .max : bytes
    }()

    /// The largest size any key accepts on this machine: `maximumSize`, or the physical memory (rounded down to
    /// a whole MiB) when that is less.
    public static var sizeCeiling: Int { min(maximumSize, (physicalMemory ?? maximumSize) & ~((1 << 20) - 1)) }

    /// The longest duration any key accepts: 30 days (`720h`).
    public static let maximumDuration: Duration = .seconds(30 * 24 * 3600)

    static let durationHint = "no duration may exceed \(ConfigValueParsing.format(duration: maximumDuration))"
    static let integerHint = "no integer setting may exceed 2^53 (\(maximumInteger))"

    /// The largest integer any key accepts (`count` of a generator, …): 2^53, so it is exact as a JSON number too.
    public static let maximumInteger = 1 << 53

    /// Why the ceiling of a size exists, for the hint of an issue.
    static var sizeHint: String {
        let memory = physicalMemory.map { "; this machine has \($0 >> 20)MiB" } ?? ""
        return "no size may exceed the physical memory or \(ConfigValueParsing.format(size: maximumSize))\(memory)"
    }
}
