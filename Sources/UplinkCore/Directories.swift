#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Creating a directory with its missing parents (`mkdir -p`), for the state the agent keeps.
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
}
