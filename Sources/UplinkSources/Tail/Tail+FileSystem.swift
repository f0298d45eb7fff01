#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import UplinkFiles

/// Thin wrappers of the system calls only the tailer makes (file identity and status, directory listing); the ones
/// other sources share are in `SourceFiles`. None of them blocks for long on a local file system.
enum TailFS {
    /// Device and inode of a file: the part of its identity the kernel guarantees while it exists.
    struct Inode: Hashable, Sendable {
        var device: UInt64
        var inode: UInt64
    }

    /// The results of `stat`/`fstat` the tailer uses.
    struct Status: Sendable, Equatable {
        var inode: Inode
        var size: UInt64
        var links: UInt64
        var isRegular: Bool
        var isDirectory: Bool
        /// Last modification, nanoseconds since the epoch.
        var modified: Int64
    }

    static func status(_ raw: stat) -> Status {
        Status(
            inode: Inode(device: UInt64(raw.st_dev), inode: UInt64(raw.st_ino)),
            size: UInt64(max(0, raw.st_size)),
            links: UInt64(raw.st_nlink),
            isRegular: (raw.st_mode & S_IFMT) == S_IFREG,
            isDirectory: (raw.st_mode & S_IFMT) == S_IFDIR,
            modified: Int64(raw.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(raw.st_mtim.tv_nsec))
    }

    /// `stat(2)` (following symbolic links), nil when it fails.
    static func status(path: String) -> Status? {
        var raw = stat()
        guard stat(path, &raw) == 0 else { return nil }
        return status(raw)
    }

    /// `fstat(2)`, nil when it fails.
    static func status(descriptor: Int32) -> Status? {
        var raw = stat()
        guard fstat(descriptor, &raw) == 0 else { return nil }
        return status(raw)
    }

    static func isRegularFile(_ path: String) -> Bool {
        status(path: path)?.isRegular ?? false
    }

    /// Whether `path` itself is a symbolic link (`lstat`).
    static func isSymbolicLink(_ path: String) -> Bool {
        var raw = stat()
        guard lstat(path, &raw) == 0 else { return false }
        return (raw.st_mode & S_IFMT) == S_IFLNK
    }

    /// The real path (symbolic links resolved, absolute) of the file open as `descriptor`, which was opened at `path`
    /// and has `inode`: read from `/proc/self/fd`, or where that is missing, `realpath(3)` of `path` if it still names
    /// the same file. nil when neither tells.
    static func realPath(descriptor: Int32, openedAt path: String, inode: Inode) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/fd/\(descriptor)", &buffer, buffer.count - 1)
        if count > 0 {
            let real = String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if real.hasPrefix("/") { return real }
        }
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        let real = String(cString: resolved)
        return status(path: real)?.inode == inode ? real : nil
    }

    /// A directory that is not a symbolic link to one.
    static func isRealDirectory(_ path: String) -> Bool {
        var raw = stat()
        guard lstat(path, &raw) == 0 else { return false }
        return (raw.st_mode & S_IFMT) == S_IFDIR
    }

    /// A directory entry with its type (`Directories.Entry`).
    typealias Entry = Directories.Entry

    /// The entries of a directory without `.` and `..`; empty when it cannot be read.
    static func list(_ path: String) -> [Entry] {
        (try? Directories.entries(path)) ?? []
    }
}
