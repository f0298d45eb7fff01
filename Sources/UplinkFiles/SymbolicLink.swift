#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading symbolic links, including the kernel's in `/proc` (`/proc/self/exe`, `/proc/self/fd/N`).
public enum SymbolicLink {
    /// The target of the symbolic link `path` as it is stored, not resolved (`readlink(2)`); nil when `path` is not
    /// a symbolic link or cannot be read, or the target is longer than `PATH_MAX`.
    public static func target(of path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink(path, &buffer, buffer.count)
        // A count that fills the buffer may be a target cut short.
        guard count > 0, count < buffer.count else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
