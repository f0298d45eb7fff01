#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Device and inode of a file: the part of its identity the kernel guarantees while it exists.
public struct FileIdentity: Hashable, Sendable {
    /// `st_dev`: the file system the file is on.
    public var device: UInt64
    /// `st_ino`: the file's number on that file system.
    public var inode: UInt64

    /// The identity of inode `inode` on device `device`.
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }
}

/// What `stat(2)` tells of a file, in the units uplink uses: its identity, size, link count, type and times. Two
/// statuses of one path that differ mean the file there was replaced, written or had its metadata changed.
public struct FileStatus: Sendable, Equatable {
    /// Device and inode.
    public var identity: FileIdentity
    /// Bytes (0 for a negative `st_size`).
    public var size: UInt64
    /// Hard links to the file (0: it was deleted and is only open).
    public var links: UInt64
    /// `st_mode`: the file's type and permission bits.
    public var mode: UInt32
    /// Last modification (`st_mtim`), nanoseconds since the epoch.
    public var modified: Int64
    /// Last status change (`st_ctim`), nanoseconds since the epoch.
    public var changed: Int64

    /// The fields of `raw`, as `stat`, `fstat` or `lstat` filled it in.
    public init(_ raw: stat) {
        identity = FileIdentity(device: UInt64(raw.st_dev), inode: UInt64(raw.st_ino))
        size = UInt64(max(0, raw.st_size))
        links = UInt64(raw.st_nlink)
        mode = UInt32(raw.st_mode)
        modified = Int64(raw.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(raw.st_mtim.tv_nsec)
        changed = Int64(raw.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(raw.st_ctim.tv_nsec)
    }

    /// The status of the file at `path` (`stat(2)`; with `followLinks` false, of a symbolic link itself: `lstat(2)`),
    /// nil when it fails.
    public init?(path: String, followLinks: Bool = true) {
        var raw = stat()
        guard (followLinks ? stat(path, &raw) : lstat(path, &raw)) == 0 else { return nil }
        self.init(raw)
    }

    /// The status of the file open as `descriptor` (`fstat(2)`), nil when it fails.
    public init?(descriptor: Int32) {
        var raw = stat()
        guard fstat(descriptor, &raw) == 0 else { return nil }
        self.init(raw)
    }

    /// Whether it is a regular file.
    public var isRegular: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFREG) }
    /// Whether it is a directory.
    public var isDirectory: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFDIR) }
    /// Whether it is a symbolic link (only an `lstat`, `followLinks: false`, can say so).
    public var isSymbolicLink: Bool { mode & UInt32(S_IFMT) == UInt32(S_IFLNK) }
}
