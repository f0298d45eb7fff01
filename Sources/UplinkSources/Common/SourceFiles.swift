#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOPosix
import UplinkCore

/// File operations the sources share, and the error they report: open for reading and read at an offset (retrying
/// on `EINTR`), and for a source's own state (checkpoint files): read a small file whole, replace one atomically,
/// remove one, make directories.
enum SourceFiles {
    /// An `errno` value with its message.
    struct Errno: Error, Equatable, Sendable, CustomStringConvertible {
        var code: Int32
        init(_ code: Int32) { self.code = code }
        var description: String {
            guard let message = strerror(code) else { return "errno \(code)" }
            return String(cString: message)
        }
    }

    /// Opens a file for reading (close-on-exec), retrying on `EINTR`. Returns the descriptor or the `errno`.
    static func openForReading(_ path: String) -> Result<Int32, Errno> {
        while true {
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
            if fd >= 0 { return .success(fd) }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }

    /// `close(2)`.
    static func closeDescriptor(_ fd: Int32) {
        _ = close(fd)
    }

    /// `pread(2)` retrying on `EINTR`; returns the byte count (0 at the end) or -1.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) -> Int {
        while true {
            let count = pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 || errno != EINTR { return count }
        }
    }

    /// Whether `path` is a directory (or a symbolic link to one).
    static func isDirectory(_ path: String) -> Bool {
        var raw = stat()
        guard stat(path, &raw) == 0 else { return false }
        return (raw.st_mode & S_IFMT) == S_IFDIR
    }

    /// Creates `path` and its missing parents (mode 0755; `Directories.create`).
    static func makeDirectories(_ path: String) -> Errno? {
        Directories.create(path, mode: 0o755).map { Errno($0.errno) }
    }

    /// The whole content of a file; nil with the `errno` when it cannot be read.
    static func readAll(_ path: String, limit: Int = 256 * 1024 * 1024) -> Result<[UInt8], Errno> {
        let fd: Int32
        switch openForReading(path) {
        case .failure(let error): return .failure(error)
        case .success(let opened): fd = opened
        }
        defer { close(fd) }
        var content: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while content.count < limit {
            let count = chunk.withUnsafeMutableBytes { read(fd, into: $0, at: UInt64(content.count)) }
            if count < 0 { return .failure(Errno(errno)) }
            if count == 0 { break }
            content.append(contentsOf: chunk[0..<count])
        }
        return .success(content)
    }

    /// Removes a file, if it is there (a failure leaves it, which readers must tolerate).
    static func removeFile(_ path: String) {
        unlink(path)
    }

    /// `writeAtomically` on NIO's blocking-I/O thread pool: an `fsync` (tens to hundreds of milliseconds on an SD
    /// card) must not hold a thread of the executor the sources run on.
    static func writeAtomicallyOnThreadPool(_ path: String, _ content: [UInt8]) async -> Errno? {
        do {
            return try await NIOThreadPool.singleton.runIfActive { writeAtomically(path, content) }
        } catch {
            // Cancelled before the pool ran it (the source is stopping and writes its final checkpoints), or the pool
            // is shut down: write here.
            return writeAtomically(path, content)
        }
    }

    /// Replaces `path` atomically with `content` (`AtomicFile.write`), so a crash leaves either the old or the new
    /// content.
    static func writeAtomically(_ path: String, _ content: [UInt8]) -> Errno? {
        do {
            try AtomicFile.write(content, to: path)
            return nil
        } catch {
            return Errno(error.errno)
        }
    }
}
