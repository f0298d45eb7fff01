#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Replacing a small file so that a crash or a power cut leaves either the old or the new content: the one way
/// checkpoints, the persistent buffer's metadata and the collector's ledger are written.
public enum AtomicFile {
    /// The step that failed, the path it worked on and the `errno` it got.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// `create`, `write`, `sync` or `rename`.
        public let operation: String
        /// The temporary file (`<path>.tmp`) for every step: the target is only touched by the rename.
        public let path: String
        public let errno: Int32

        public init(operation: String, path: String, errno: Int32) {
            self.operation = operation
            self.path = path
            self.errno = errno
        }

        public var description: String {
            "cannot \(operation) \(path): \(String(cString: strerror(errno)))"
        }
    }

    /// Replaces `path` with `bytes`: writes `<path>.tmp` (created with `mode`), flushes it to disk (`fsync`),
    /// renames it over `path` and flushes the directory. On failure the temporary file is removed and `path` is as
    /// it was.
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws(Failure) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw Failure(operation: "create", path: temporary, errno: errno) }
        func fail(_ operation: String, _ code: Int32) -> Failure {
            close(fd)
            unlink(temporary)
            return Failure(operation: operation, path: temporary, errno: code)
        }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { systemWrite(fd, $0.baseAddress! + written, bytes.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                throw fail("write", errno)
            }
            written += count
        }
        while fsync(fd) != 0 {
            if errno == EINTR { continue }
            throw fail("sync", errno)
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw Failure(operation: "rename", path: temporary, errno: code)
        }
        let directory = open(parentDirectory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            while fsync(directory) != 0 && errno == EINTR {}
            close(directory)
        }
    }

    /// The directory part of a path: `.` for a bare name, `/` for a file at the root.
    public static func parentDirectory(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == path.utf8.startIndex { return "/" }
        return String(path[..<slash])
    }
}

#if canImport(Glibc)
private let systemWrite = Glibc.write
#elseif canImport(Musl)
private let systemWrite = Musl.write
#elseif canImport(Darwin)
private let systemWrite = Darwin.write
#endif
