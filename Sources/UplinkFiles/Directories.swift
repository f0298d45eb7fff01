#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Directories of the state uplink keeps: creating one with its parents, listing one, flushing its entries.
public enum Directories {
    /// Creates `path` and each missing parent with `mode`; directories that exist are left as they are. Fails
    /// (operation `create directory`) with the directory that could not be made, or with `path` when it is not a
    /// directory afterwards.
    public static func create(_ path: String, mode: mode_t = 0o700) throws(FileError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += component
            if mkdir(prefix, mode) != 0 && errno != EEXIST {
                throw FileError(operation: "create directory", path: prefix, errno: errno)
            }
            prefix += "/"
        }
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw FileError(operation: "create directory", path: path, errno: errno) }
        close(fd)
    }

    /// The names in `directory` (without `.` and `..`), unsorted. Fails (operation `list`) when it cannot be opened.
    public static func list(_ directory: String) throws(FileError) -> [String] {
        guard let handle = opendir(directory) else { throw FileError(operation: "list", path: directory, errno: errno) }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Flushes a directory's entries to disk (after a create, rename or unlink), best effort.
    public static func sync(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        SystemFile.syncIgnoringFailure(fd)
        close(fd)
    }
}
