#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Replacing a small file so that a crash or a power cut leaves either the old or the new content: the one way
/// checkpoints, the persistent buffer's metadata, the collector's ledger and the remote configuration's state are
/// written.
public enum AtomicFile {
    /// Replaces `path` with `bytes`: writes `<path>.tmp` (created with `mode`), flushes it to disk (`fsync`),
    /// renames it over `path` and flushes the directory. On failure the temporary file is removed and `path` is as
    /// it was. The error's operation is `create`, `write`, `sync` or `rename`, and its path the temporary file for
    /// every step: the target is only touched by the rename.
    public static func write(_ bytes: [UInt8], to path: String, mode: mode_t = 0o644) throws(FileError) {
        let temporary = path + ".tmp"
        let fd = try SystemFile.open(temporary, .truncate, mode: mode, operation: "create")
        do throws(FileError) {
            try SystemFile.writeAll(fd, bytes, path: temporary)
            try SystemFile.sync(fd, path: temporary)
        } catch {
            SystemFile.close(fd)
            unlink(temporary)
            throw error
        }
        SystemFile.close(fd)
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw FileError(operation: "rename", path: temporary, errno: code)
        }
        Directories.sync(parentDirectory(of: path))
    }

    /// The directory part of a path: `.` for a bare name, `/` for a file at the root.
    public static func parentDirectory(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == path.utf8.startIndex { return "/" }
        return String(path[..<slash])
    }
}
