#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a file operation failed: the operation, the path it worked on and the system's reason (an `errno`), or a
/// file too large for the limit its reader set. The one error of the file layer; modules with a meaning of their own
/// (the collector's `CollectorError`, the persistent buffer's error) hold one instead of an `errno` of their own.
public struct FileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Sendable, Equatable {
        /// A system call failed with this `errno`.
        case system(errno: Int32)
        /// The file holds more than `limit` bytes (`WholeFile.read`).
        case tooLarge(limit: Int)
    }

    /// The operation that failed, as a verb: `open`, `read`, `write`, `sync`, `rename`, `create`,
    /// `create directory`, `list`, `truncate`, `stat`, `remove`.
    public let operation: String
    /// The file or directory the operation worked on (for an atomic write: the temporary file).
    public let path: String
    /// The system's reason, or the limit a file exceeded.
    public let reason: Reason

    /// A failure of `operation` on `path` with `reason`.
    public init(operation: String, path: String, reason: Reason) {
        self.operation = operation
        self.path = path
        self.reason = reason
    }

    /// A system call for `operation` on `path` failed with `errno`.
    public init(operation: String, path: String, errno: Int32) {
        self.init(operation: operation, path: path, reason: .system(errno: errno))
    }

    /// The `errno` of a failed system call; `EFBIG` for a file over its reader's limit.
    public var errno: Int32 {
        switch reason {
        case .system(let code): code
        case .tooLarge: EFBIG
        }
    }

    /// Whether the file, or a directory on its path, is not there (`ENOENT`).
    public var isMissing: Bool { reason == .system(errno: ENOENT) }

    /// The reason alone, without the operation and the path: `errno 2 (No such file or directory)` or
    /// `larger than 65536 bytes`, for messages that name the file themselves.
    public var reasonDescription: String {
        switch reason {
        case .system(let code): "errno \(code) (\(Self.text(errno: code)))"
        case .tooLarge(let limit): "larger than \(limit) bytes"
        }
    }

    /// `cannot <operation> <path>: <the system's text for errno>`, or `cannot read <path>: larger than N bytes`.
    public var description: String {
        switch reason {
        case .system(let code): "cannot \(operation) \(path): \(Self.text(errno: code))"
        case .tooLarge(let limit): "cannot \(operation) \(path): larger than \(limit) bytes"
        }
    }

    /// The system's text for `errno` (`strerror`), or `errno N` when it has none.
    public static func text(errno code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return String(cString: text)
    }
}
