#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import UplinkCore
import UplinkFiles

/// File operations the sources share, through the file layer (`UplinkFiles`), and the error they report: open for
/// reading and read at an offset, and for a source's own state (checkpoint files): read a small file whole, replace
/// one atomically, remove one, make directories.
enum SourceFiles {
    /// An `errno` value with its message: a file operation's (the path is in the message around it), or inotify's and
    /// a pipe's.
    struct Errno: Error, Equatable, Sendable, CustomStringConvertible {
        var code: Int32
        init(_ code: Int32) { self.code = code }
        /// The `errno` of a failed file operation.
        init(_ error: FileError) { self.code = error.errno }
        var description: String { FileError.text(errno: code) }
    }

    /// Opens a file for reading (close-on-exec, non-blocking, never the controlling terminal). Returns the descriptor
    /// or the `errno`.
    static func openForReading(_ path: String) -> Result<Int32, Errno> {
        Result { () throws(FileError) in try SystemFile.open(path, .readNonBlocking) }.mapError { Errno($0) }
    }

    /// `close(2)`.
    static func closeDescriptor(_ fd: Int32) {
        SystemFile.close(fd)
    }

    /// One `pread(2)` at `offset`: the byte count (0 at the end) or the `errno`.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) -> Result<Int, Errno> {
        Result { () throws(FileError) in try SystemFile.read(fd, into: buffer, at: Int64(offset), path: "") }
            .mapError { Errno($0) }
    }

    /// `read`'s byte count, or -1 when it failed (for callers that treat a failure as an empty file).
    static func readCount(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: UInt64) -> Int {
        (try? read(fd, into: buffer, at: offset).get()) ?? -1
    }

    /// Whether `path` is a directory (or a symbolic link to one).
    static func isDirectory(_ path: String) -> Bool {
        FileStatus(path: path)?.isDirectory ?? false
    }

    /// Creates `path` and its missing parents (mode 0755; `Directories.create`).
    static func makeDirectories(_ path: String) -> Errno? {
        do {
            try Directories.create(path, mode: 0o755)
            return nil
        } catch {
            return Errno(error)
        }
    }

    /// The whole content of a file (`WholeFile.read`), or the `errno` when it cannot be read (`EFBIG`: more than
    /// `limit` bytes).
    static func readAll(_ path: String, limit: Int = 256 * 1024 * 1024) -> Result<[UInt8], Errno> {
        WholeFile.read(path: path, limit: limit).mapError { Errno($0) }
    }

    /// Removes a file, if it is there (a failure leaves it, which readers must tolerate).
    static func removeFile(_ path: String) {
        unlink(path)
    }

    /// `writeAtomically` on NIO's blocking-I/O thread pool: an `fsync` (tens to hundreds of milliseconds on an SD
    /// card) must not hold a thread of the executor the sources run on.
    static func writeAtomicallyOnThreadPool(_ path: String, _ content: [UInt8]) async -> Errno? {
        // Also when the source is stopping: its final checkpoints are written (here, if the pool refuses).
        await BlockingFileWork.run { writeAtomically(path, content) }
    }

    /// Replaces `path` atomically with `content` (`AtomicFile.write`), so a crash leaves either the old or the new
    /// content.
    static func writeAtomically(_ path: String, _ content: [UInt8]) -> Errno? {
        do {
            try AtomicFile.write(content, to: path)
            return nil
        } catch {
            return Errno(error)
        }
    }
}
