import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where sinks of type `stdout` write their text: the process's standard output, or what a test or an embedding
/// program passes to `Collector.init(configuration:logger:stdout:metrics:)`.
public protocol CollectorOutput: Sendable {
    /// Writes `bytes`, which are whole lines. Called from a thread pool thread; may block.
    func write(_ bytes: UnsafeRawBufferPointer) throws
}

/// Writes to the process's standard output (file descriptor 1) with write(2).
public struct StandardOutput: CollectorOutput {
    /// Writes to file descriptor 1.
    public init() {}

    /// Writes all of `bytes` with write(2), retrying short writes; throws `CollectorError` on failure.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        try FileIO.writeAll(1, bytes, path: "standard output")
    }
}
