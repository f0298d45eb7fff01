import CLinuxIO
import UplinkCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin, blocking wrappers over the file system calls the collector's storage uses. Called on the storage thread
/// (never on the cooperative pool), and at start-up.
enum FileIO {
    static func describe(errno code: Int32) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return String(cString: text) + " (errno \(code))"
    }

    /// Opens (creating with mode 0644) `path` for appending: every write(2) lands at the current end of file.
    static func openForAppending(_ path: String) throws(CollectorError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io("open", path, errno: errno) }
        return fd
    }

    /// Opens `path` for reading and writing (creating it when `create`); nil when it does not exist and not `create`.
    static func openForUpdate(_ path: String, create: Bool) throws(CollectorError) -> Int32? {
        let fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0o644)
        if fd < 0 {
            if errno == ENOENT && !create { return nil }
            throw .io("open", path, errno: errno)
        }
        return fd
    }

    /// Opens `path` read-only; nil when it does not exist.
    static func openForReading(_ path: String) throws(CollectorError) -> Int32? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw .io("open", path, errno: errno)
        }
        return fd
    }

    /// Creates (truncating) `path` for writing.
    static func create(_ path: String) throws(CollectorError) -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io("create", path, errno: errno) }
        return fd
    }

    static func closeFile(_ fd: Int32) {
        _ = close(fd)
    }

    /// Writes all of `bytes`, retrying after interruptions and short writes.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(CollectorError) {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw .io("write", path, errno: errno)
            }
            offset += written
        }
    }

    // Page-cache hints (`PageCacheTail`). Their failures are ignored: a file system without them (tmpfs, some
    // network ones) keeps its pages cached, as it would without the hints.

    /// The system's page size in bytes (4096 if it cannot be read).
    static let pageBytes: Int64 = {
        let size = sysconf(Int32(_SC_PAGESIZE))
        return size > 0 ? Int64(size) : 4096
    }()

    /// Starts writing back the dirty pages of the range, without waiting.
    static func startWriteback(_ fd: Int32, offset: Int64, count: Int64) {
        _ = uplink_start_writeback(fd, offset, count)
    }

    /// Writes back the dirty pages of the range and waits until all of it is on the device.
    static func finishWriteback(_ fd: Int32, offset: Int64, count: Int64) {
        _ = uplink_finish_writeback(fd, offset, count)
    }

    /// Drops the range's clean pages from the page cache.
    static func dropCachedPages(_ fd: Int32, offset: Int64, count: Int64) {
        _ = posix_fadvise(fd, off_t(offset), off_t(count), POSIX_FADV_DONTNEED)
    }

    static func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws(CollectorError) {
        guard !bytes.isEmpty else { return }
        try bytes.withUnsafeBytes { raw in
            Result { () throws(CollectorError) in try writeAll(fd, raw, path: path) }
        }.get()
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; returns the number read (0 at the end of the file).
    static func readFile(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws(CollectorError) -> Int {
        while true {
            let count = pread(fd, buffer.baseAddress!, buffer.count, off_t(offset))
            if count < 0 {
                if errno == EINTR { continue }
                throw .io("read", path, errno: errno)
            }
            return count
        }
    }

    static func fileSize(_ fd: Int32, path: String) throws(CollectorError) -> Int64 {
        let end = lseek(fd, 0, SEEK_END)
        guard end >= 0 else { throw .io("seek", path, errno: errno) }
        return Int64(end)
    }

    static func truncateFile(_ fd: Int32, to length: Int64, path: String) throws(CollectorError) {
        while ftruncate(fd, off_t(length)) != 0 {
            if errno == EINTR { continue }
            throw .io("truncate", path, errno: errno)
        }
    }

    static func syncFile(_ fd: Int32, path: String) throws(CollectorError) {
        while fsync(fd) != 0 {
            if errno == EINTR { continue }
            throw .io("fsync", path, errno: errno)
        }
    }

    /// Flushes a directory's entries (after a rename), best effort.
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        _ = close(fd)
    }

    static func renameFile(_ from: String, to: String) throws(CollectorError) {
        guard rename(from, to) == 0 else { throw .io("rename", "\(from) to \(to)", errno: errno) }
    }

    static func removeFile(_ path: String) {
        _ = unlink(path)
    }

    /// Creates `path` and its missing parents (mode 0755; `Directories.create`).
    static func makeDirectories(_ path: String) throws(CollectorError) {
        guard !path.isEmpty else { return }
        if let failure = Directories.create(path, mode: 0o755) {
            throw .io("create directory", failure.path, errno: failure.errno)
        }
    }

    /// The names in directory `path` (without `.` and `..`), unsorted (`Directories.list`).
    static func listDirectory(_ path: String) throws(CollectorError) -> [String] {
        switch Directories.list(path) {
        case .success(let names): return names
        case .failure(let failure): throw .io("open directory", path, errno: failure.errno)
        }
    }

    /// The file's size and last modification time (seconds since the epoch), nil when it does not exist.
    static func status(_ path: String) -> (size: Int64, modified: Int64)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return (Int64(info.st_size), Int64(info.st_mtim.tv_sec))
    }

    /// Writes `bytes` to `path` atomically (`AtomicFile.write`).
    static func writeAtomically(_ path: String, _ bytes: [UInt8]) throws(CollectorError) {
        do {
            try AtomicFile.write(bytes, to: path)
        } catch {
            throw .io(error.operation, error.path, errno: error.errno)
        }
    }
}
