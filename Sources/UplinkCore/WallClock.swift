#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the system's real-time clock.
public enum WallClock {
    /// Nanoseconds since the Unix epoch, as `CLOCK_REALTIME` reports them now.
    @inline(__always)
    public static func nowNanoseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
    }
}
