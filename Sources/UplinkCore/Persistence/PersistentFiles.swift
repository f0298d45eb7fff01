#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why the persistent buffer could not use its directory: the operation, the path and the system's reason.
public struct PersistentBufferError: Error, CustomStringConvertible, Sendable {
    public let operation: String
    public let path: String
    public let errno: Int32

    public var description: String {
        "persistent buffer: cannot \(operation) \(path): \(String(cString: strerror(errno)))"
    }
}

/// The few POSIX file operations the persistent buffer needs, retrying on `EINTR`.
enum PersistentFiles {
    /// Creates `path` and its missing parents (mode 0700: buffered records may be sensitive).
    static func makeDirectories(_ path: String) throws(PersistentBufferError) {
        if let failure = Directories.create(path, mode: 0o700) {
            throw PersistentBufferError(operation: "create directory", path: failure.path, errno: failure.errno)
        }
    }

    /// The names of the entries in `directory`.
    static func list(_ directory: String) throws(PersistentBufferError) -> [String] {
        switch Directories.list(directory) {
        case .success(let names): return names
        case .failure(let failure): throw PersistentBufferError(operation: "list", path: directory, errno: failure.errno)
        }
    }

    static func openForReading(_ path: String) throws(PersistentBufferError) -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw PersistentBufferError(operation: "open", path: path, errno: errno) }
        return fd
    }

    /// Opens `path` for appending, creating it if needed.
    static func openForAppending(_ path: String) throws(PersistentBufferError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw PersistentBufferError(operation: "open", path: path, errno: errno) }
        return fd
    }

    static func size(_ fd: Int32) -> Int {
        var info = stat()
        return fstat(fd, &info) == 0 ? Int(info.st_size) : 0
    }

    /// Writes all of `bytes` (the fd is in append mode); returns errno on failure.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32? {
        var done = 0
        while done < bytes.count {
            let count = write(fd, bytes.baseAddress! + done, bytes.count - done)
            if count < 0 {
                if errno == EINTR { continue }
                return errno
            }
            done += count
        }
        return nil
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; returns how many were read (fewer only at the end).
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, count: Int, at offset: Int) -> Int {
        var done = 0
        while done < count {
            let result = pread(fd, buffer.baseAddress! + done, count - done, off_t(offset + done))
            if result < 0 {
                if errno == EINTR { continue }
                break
            }
            if result == 0 { break }
            done += result
        }
        return done
    }

    static func closeDescriptor(_ fd: Int32) -> Int32 {
        close(fd)
    }

    static func sync(_ fd: Int32) {
        while fsync(fd) != 0 && errno == EINTR {}
    }

    /// Flushes a directory's entries (after a create, rename or unlink), best effort.
    static func syncDirectory(_ path: String) {
        Directories.sync(path)
    }

    /// Replaces `path` with `bytes` (`AtomicFile.write`, mode 0600: buffered records may be sensitive).
    static func writeAtomically(_ path: String, _ bytes: [UInt8]) throws(PersistentBufferError) {
        do {
            try AtomicFile.write(bytes, to: path, mode: 0o600)
        } catch {
            throw PersistentBufferError(operation: error.operation, path: error.path, errno: error.errno)
        }
    }

    static func readWhole(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: limit)
        let count = bytes.withUnsafeMutableBytes { read(fd, into: $0, count: limit, at: 0) }
        return Array(bytes.prefix(count))
    }
}
