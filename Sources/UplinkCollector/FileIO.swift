import CLinuxIO
import UplinkCore
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The file system calls the collector's storage uses, through the file layer (`UplinkFiles`), failing with
/// `CollectorError.io`: the collector's modes (0644 files, 0755 directories) and its page-cache hints. Blocking: called
/// on the storage thread (never on the cooperative pool), and at start-up.
enum FileIO {
    /// Runs a file-layer call, its `FileError` told as the collector's `io_error`.
    private static func io<T>(_ body: () throws(FileError) -> T) throws(CollectorError) -> T {
        do {
            return try body()
        } catch {
            throw .io(error)
        }
    }

    /// Opens (creating with mode 0644) `path` for appending: every write(2) lands at the current end of file.
    static func openForAppending(_ path: String) throws(CollectorError) -> Int32 {
        try io { () throws(FileError) in try SystemFile.open(path, .append) }
    }

    /// Opens `path` for reading and writing (creating it when `create`); nil when it does not exist and not `create`.
    static func openForUpdate(_ path: String, create: Bool) throws(CollectorError) -> Int32? {
        do {
            return try SystemFile.open(path, .update(create: create))
        } catch {
            if error.isMissing && !create { return nil }
            throw .io(error)
        }
    }

    /// Opens `path` read-only; nil when it does not exist.
    static func openForReading(_ path: String) throws(CollectorError) -> Int32? {
        do {
            return try SystemFile.open(path, .read)
        } catch {
            if error.isMissing { return nil }
            throw .io(error)
        }
    }

    static func closeFile(_ fd: Int32) {
        SystemFile.close(fd)
    }

    /// Writes all of `bytes`, retrying after interruptions and short writes.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws(CollectorError) {
        try io { () throws(FileError) in try SystemFile.writeAll(fd, bytes, path: path) }
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
        try io { () throws(FileError) in try SystemFile.writeAll(fd, bytes, path: path) }
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; returns the number read (0 at the end of the file).
    static func readFile(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, path: String) throws(CollectorError) -> Int {
        try io { () throws(FileError) in try SystemFile.read(fd, into: buffer, at: offset, path: path) }
    }

    /// The file's size, from a seek to its end (which leaves the offset there: a descriptor opened for update writes
    /// at the end afterwards).
    static func fileSize(_ fd: Int32, path: String) throws(CollectorError) -> Int64 {
        let end = lseek(fd, 0, SEEK_END)
        guard end >= 0 else { throw .io(FileError(operation: "seek", path: path, errno: errno)) }
        return Int64(end)
    }

    static func truncateFile(_ fd: Int32, to length: Int64, path: String) throws(CollectorError) {
        try io { () throws(FileError) in try SystemFile.truncate(fd, to: length, path: path) }
    }

    static func syncFile(_ fd: Int32, path: String) throws(CollectorError) {
        try io { () throws(FileError) in try SystemFile.sync(fd, path: path) }
    }

    /// Flushes a directory's entries (after a rename), best effort.
    static func syncDirectory(_ path: String) {
        Directories.sync(path)
    }

    static func removeFile(_ path: String) {
        _ = unlink(path)
    }

    /// Creates `path` and its missing parents (mode 0755; `Directories.create`); an empty path is the current
    /// directory, which is there.
    static func makeDirectories(_ path: String) throws(CollectorError) {
        guard !path.isEmpty else { return }
        try io { () throws(FileError) in try Directories.create(path, mode: 0o755) }
    }

    /// The names in directory `path` (without `.` and `..`), unsorted (`Directories.list`).
    static func listDirectory(_ path: String) throws(CollectorError) -> [String] {
        try io { () throws(FileError) in try Directories.list(path) }
    }

    /// Writes `bytes` to `path` atomically (`AtomicFile.write`).
    static func writeAtomically(_ path: String, _ bytes: [UInt8]) throws(CollectorError) {
        try io { () throws(FileError) in try AtomicFile.write(bytes, to: path) }
    }
}
