#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import UplinkFiles

/// Thin wrappers of the system calls only the tailer makes (file types, real paths, directory listing); the ones
/// other sources share are in `SourceFiles`, a file's status is UplinkFiles' `FileStatus`. None of them blocks for
/// long on a local file system.
enum TailFS {
    static func isRegularFile(_ path: String) -> Bool {
        FileStatus(path: path)?.isRegular ?? false
    }

    /// Whether `path` itself is a symbolic link (`lstat`).
    static func isSymbolicLink(_ path: String) -> Bool {
        FileStatus(path: path, followLinks: false)?.isSymbolicLink ?? false
    }

    /// The real path (symbolic links resolved, absolute) of the file open as `descriptor`, which was opened at `path`
    /// and has `inode`: read from `/proc/self/fd`, or where that is missing, `realpath(3)` of `path` if it still names
    /// the same file. nil when neither tells.
    static func realPath(descriptor: Int32, openedAt path: String, inode: FileIdentity) -> String? {
        if let real = SymbolicLink.target(of: "/proc/self/fd/\(descriptor)"), real.hasPrefix("/") { return real }
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        let real = String(cString: resolved)
        return FileStatus(path: real)?.identity == inode ? real : nil
    }

    /// A directory that is not a symbolic link to one.
    static func isRealDirectory(_ path: String) -> Bool {
        FileStatus(path: path, followLinks: false)?.isDirectory ?? false
    }

    /// A directory entry with its type (`Directories.Entry`).
    typealias Entry = Directories.Entry

    /// The entries of a directory without `.` and `..`; empty when it cannot be read.
    static func list(_ path: String) -> [Entry] {
        (try? Directories.entries(path)) ?? []
    }
}
