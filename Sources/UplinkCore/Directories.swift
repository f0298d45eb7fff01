#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Directories of the state the agent keeps: creating one with its parents, listing one, flushing its entries.
public enum Directories {
    /// Creates `path` and each missing parent with `mode`; directories that exist are left as they are. Returns the
    /// failing directory and `errno`, or nil when `path` is a directory afterwards.
    public static func create(_ path: String, mode: mode_t = 0o700) -> (path: String, errno: Int32)? {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += component
            if mkdir(prefix, mode) != 0 && errno != EEXIST { return (prefix, errno) }
            prefix += "/"
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return (path, errno) }
        close(fd)
        return nil
    }

    /// The names in `directory` (without `.` and `..`), or the `errno` of `opendir`.
    public static func list(_ directory: String) -> Result<[String], DirectoryError> {
        guard let handle = opendir(directory) else { return .failure(DirectoryError(errno: errno)) }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return .success(names)
    }

    /// Flushes a directory's entries to disk (after a create, rename or unlink), best effort.
    public static func sync(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        while fsync(fd) != 0 && errno == EINTR {}
        close(fd)
    }

    /// Why a directory could not be read.
    public struct DirectoryError: Error, Sendable, Equatable {
        public let errno: Int32
    }
}
