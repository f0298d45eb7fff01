#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads a whole small file with plain system calls (no Foundation): configuration and secret files, certificates,
/// and `/proc` files, whose size is unknown until they are read.
public enum WholeFile {
    /// Why a file could not be read whole.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// `open` or `read` failed with this `errno`.
        case system(errno: Int32)
        /// The file holds more than `limit` bytes.
        case tooLarge(limit: Int)

        public var description: String {
            switch self {
            case .system(let code): "errno \(code) (\(String(cString: strerror(code))))"
            case .tooLarge(let limit): "larger than \(limit) bytes"
            }
        }
    }

    /// The contents of the file at `path`, read in 64 KiB chunks until its end; more than `limit` bytes is a failure.
    public static func read(path: String, limit: Int = .max) -> Result<[UInt8], Failure> {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return .failure(.system(errno: errno)) }
        defer { close(descriptor) }
        var contents: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(.system(errno: errno))
            }
            if count == 0 { return .success(contents) }
            contents.append(contentsOf: chunk[..<count])
            if contents.count > limit { return .failure(.tooLarge(limit: limit)) }
        }
    }
}

/// `read(2)`, under a name that the static `WholeFile.read(path:limit:)` does not shadow.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}
