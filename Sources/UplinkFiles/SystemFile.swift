#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The system calls on an open file, each retried on `EINTR` and failing with a `FileError` that names the path:
/// open, read at an offset (once, or until the buffer is full), write all of a buffer (at the end or at an offset),
/// flush to disk, size, truncate, close. Descriptors are plain `Int32`s, opened close-on-exec.
public enum SystemFile {
    /// How `open` opens a file. Every way adds `O_CLOEXEC`.
    public enum Access: Sendable, Equatable {
        /// `O_RDONLY`.
        case read
        /// `O_RDONLY | O_NOCTTY | O_NONBLOCK`: a FIFO or a terminal does not block or become the controlling one
        /// (files a log tailer is pointed at).
        case readNonBlocking
        /// `O_WRONLY | O_CREAT | O_APPEND`: every write lands at the current end of the file.
        case append
        /// `O_RDWR`, with `O_CREAT` when `create`.
        case update(create: Bool)
        /// `O_WRONLY | O_CREAT | O_TRUNC`: a new, empty file.
        case truncate
        /// `O_WRONLY | O_CREAT | O_EXCL`: a file that must not exist yet.
        case createNew

        var flags: Int32 {
            switch self {
            case .read: O_RDONLY | O_CLOEXEC
            case .readNonBlocking: O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK
            case .append: O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC
            case .update(let create): O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0)
            case .truncate: O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC
            case .createNew: O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC
            }
        }
    }

    /// Opens `path` as `access` says; a file it creates gets `mode` (before the umask). The failure's operation is
    /// `operation` (`open`, or `create` for a file being made).
    public static func open(
        _ path: String, _ access: Access, mode: mode_t = 0o644, operation: String = "open"
    ) throws(FileError) -> Int32 {
        while true {
            let fd = systemOpen(path, access.flags, mode)
            if fd >= 0 { return fd }
            let code = errno
            if code != EINTR { throw FileError(operation: operation, path: path, errno: code) }
        }
    }

    /// Closes `fd`; its result is not looked at (Linux releases the descriptor even when `close` fails).
    public static func close(_ fd: Int32) {
        _ = systemClose(fd)
    }

    /// One `pread(2)` of up to `buffer.count` bytes at `offset`: the number read, 0 at the end of the file.
    public static func read(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String
    ) throws(FileError) -> Int {
        guard buffer.count > 0 else { return 0 }
        while true {
            let count = pread(fd, buffer.baseAddress, buffer.count, off_t(offset))
            if count >= 0 { return count }
            let code = errno
            if code != EINTR { throw FileError(operation: "read", path: path, errno: code) }
        }
    }

    /// One `read(2)` of up to `buffer.count` bytes at the file's offset (a pipe has no other): the number read, 0 at
    /// the end.
    public static func readNext(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, path: String) throws(FileError) -> Int {
        guard buffer.count > 0 else { return 0 }
        while true {
            let count = systemRead(fd, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            let code = errno
            if code != EINTR { throw FileError(operation: "read", path: path, errno: code) }
        }
    }

    /// `pread(2)` until `buffer` is full or the file ends: the number read, fewer than `buffer.count` only at the end.
    public static func readFully(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String
    ) throws(FileError) -> Int {
        var done = 0
        while done < buffer.count {
            let count = try read(fd, into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]),
                                 at: offset + Int64(done), path: path)
            if count == 0 { break }
            done += count
        }
        return done
    }

    /// `write(2)` until all of `bytes` is written (at the file's offset, or its end in append mode), continuing after
    /// short writes.
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(FileError) {
        var done = 0
        while done < bytes.count {
            let count = systemWrite(fd, bytes.baseAddress! + done, bytes.count - done)
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw FileError(operation: "write", path: path, errno: code)
            }
            done += count
        }
    }

    /// `writeAll` of an array.
    public static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(FileError) {
        try bytes.withUnsafeBytes { raw in
            Result { () throws(FileError) in try writeAll(fd, raw, path: path) }
        }.get()
    }

    /// `pwrite(2)` until all of `bytes` is written at `offset`, continuing after short writes.
    public static func writeAll(
        _ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int64, path: String
    ) throws(FileError) {
        var done = 0
        while done < bytes.count {
            let count = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + Int64(done)))
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw FileError(operation: "write", path: path, errno: code)
            }
            done += count
        }
    }

    /// `writev(2)` until all `total` bytes of `vectors` are written, continuing after short writes (which advance
    /// `vectors` in place): one system call for a frame's header and body parts, with no copy. `path` is only
    /// evaluated for an error, so a caller on a hot path builds no string per write.
    public static func writeAll(
        _ fd: Int32, _ vectors: UnsafeMutableBufferPointer<iovec>, total: Int, path: @autoclosure () -> String
    ) throws(FileError) {
        var remaining = total
        var index = 0
        while remaining > 0 {
            let count = writev(fd, vectors.baseAddress! + index, Int32(vectors.count - index))
            if count < 0 {
                let code = errno
                if code == EINTR { continue }
                throw FileError(operation: "write", path: path(), errno: code)
            }
            remaining -= count
            var advance = count
            while index < vectors.count, advance >= vectors[index].iov_len {
                advance -= vectors[index].iov_len
                index += 1
            }
            if advance > 0 {
                vectors[index].iov_base += advance
                vectors[index].iov_len -= advance
            }
        }
    }

    /// `fsync(2)`: the file's data and metadata are on the device when this returns.
    public static func sync(_ fd: Int32, path: String) throws(FileError) {
        while fsync(fd) != 0 {
            let code = errno
            if code == EINTR { continue }
            throw FileError(operation: "sync", path: path, errno: code)
        }
    }

    /// `fsync(2)`, best effort: for callers that have no one to report a failure to (a later write or the next
    /// start finds the problem).
    public static func syncIgnoringFailure(_ fd: Int32) {
        while fsync(fd) != 0 && errno == EINTR {}
    }

    /// The file's size in bytes (`fstat`).
    public static func size(_ fd: Int32, path: String) throws(FileError) -> Int64 {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileError(operation: "stat", path: path, errno: errno) }
        return Int64(info.st_size)
    }

    /// Cuts (or extends) the file to `length` bytes (`ftruncate`).
    public static func truncate(_ fd: Int32, to length: Int64, path: String) throws(FileError) {
        while ftruncate(fd, off_t(length)) != 0 {
            let code = errno
            if code == EINTR { continue }
            throw FileError(operation: "truncate", path: path, errno: code)
        }
    }
}

// The C functions under names that `SystemFile`'s own `open`, `close`, `read` and `writeAll` do not shadow.
#if canImport(Glibc)
private let systemClose = Glibc.close
private let systemWrite = Glibc.write
private let systemRead = Glibc.read
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Glibc.open(path, flags, mode) }
#elseif canImport(Musl)
private let systemClose = Musl.close
private let systemWrite = Musl.write
private let systemRead = Musl.read
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Musl.open(path, flags, mode) }
#elseif canImport(Darwin)
private let systemClose = Darwin.close
private let systemWrite = Darwin.write
private let systemRead = Darwin.read
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { Darwin.open(path, flags, mode) }
#endif
