import UplinkCore
import UplinkFiles

/// Why a file named by the configuration could not be read.
public struct ConfigFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `errno` value, or 0 when the problem is not a system error (the file is too large).
    public var errorNumber: Int32
    /// `strerror(errno)`, or a description of the problem.
    public var text: String

    public init(errorNumber: Int32, text: String) {
        self.errorNumber = errorNumber
        self.text = text
    }

    /// The `strerror` text, e.g. `No such file or directory`.
    public var description: String { text }
}

/// Small whole-file reads with plain system calls (no Foundation).
public enum ConfigFiles {
    /// The contents of the file at `path`, at most `limit` bytes (a larger file is an error).
    public static func read(path: String, limit: Int) -> Result<[UInt8], ConfigFileError> {
        WholeFile.read(path: path, limit: limit).mapError { failure in
            switch failure.reason {
            case .system(let code): ConfigFileError(errorNumber: code, text: FileError.text(errno: code))
            case .tooLarge(let limit): ConfigFileError(errorNumber: 0, text: "the file is larger than \(limit) bytes")
            }
        }
    }

    /// `path` itself if it is absolute (or `directory` is the current one, `.` or empty), else `path` inside
    /// `directory`.
    public static func resolve(_ path: String, relativeTo directory: String) -> String {
        if path.hasPrefix("/") || directory.isEmpty || directory == "." { return path }
        return directory.hasSuffix("/") ? directory + path : directory + "/" + path
    }
}
