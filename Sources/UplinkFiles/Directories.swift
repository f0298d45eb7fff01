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
        try entries(directory).map(\.name)
    }

    /// One entry of a directory, with the type the directory records for it (`d_type`).
    public struct Entry: Sendable, Equatable {
        /// The entry's name, without the directory.
        public var name: String
        /// Whether it is a directory; nil when the file system does not say.
        public var isDirectory: Bool?
        /// Whether it is a regular file; nil when the file system does not say.
        public var isRegular: Bool?
        /// Whether it is a symbolic link (false also when the file system does not say).
        public var isSymbolicLink: Bool

        /// An entry named `name` of the given type.
        public init(name: String, isDirectory: Bool?, isRegular: Bool?, isSymbolicLink: Bool) {
            self.name = name
            self.isDirectory = isDirectory
            self.isRegular = isRegular
            self.isSymbolicLink = isSymbolicLink
        }
    }

    /// The entries of `directory` (without `.` and `..`), unsorted, with their types. Fails (operation `list`) when
    /// it cannot be opened.
    public static func entries(_ directory: String) throws(FileError) -> [Entry] {
        guard let handle = opendir(directory) else { throw FileError(operation: "list", path: directory, errno: errno) }
        defer { closedir(handle) }
        var entries: [Entry] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            let type = Int32(entry.pointee.d_type)
            let known = type != Int32(DT_UNKNOWN)
            entries.append(Entry(
                name: name, isDirectory: known ? type == Int32(DT_DIR) : nil, isRegular: known ? type == Int32(DT_REG) : nil,
                isSymbolicLink: type == Int32(DT_LNK)))
        }
        return entries
    }

    /// Removes `path` and, when it is a directory, everything below it; symbolic links are removed, not followed.
    /// Best effort: a missing path is fine, and what cannot be removed is left.
    public static func removeTree(_ path: String) {
        guard let status = FileStatus(path: path, followLinks: false) else { return }
        if status.isDirectory {
            for name in (try? list(path)) ?? [] { removeTree(path + "/" + name) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }

    /// Flushes a directory's entries to disk (after a create, rename or unlink), best effort.
    public static func sync(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        SystemFile.syncIgnoringFailure(fd)
        close(fd)
    }
}
