import SystemPackage
import UplinkFiles

/// Reads a small file (procfs, sysfs) completely into a reusable buffer through the file layer (`SystemFile`).
///
/// Procfs files report a size of 0, so the file is read until end of file; the buffer grows (doubling) when a
/// file does not fit and keeps that size for later reads, so a steady-state read allocates nothing.
/// The file is opened anew on every read: procfs generates the contents on open, and a replaced file (a test
/// fixture rewritten between ticks, a remounted `/proc`) is always seen.
struct SmallFileReader: Sendable {
    /// The file read by `read()`.
    let path: FilePath
    /// `path` as a string, for log messages.
    let pathString: String

    /// Largest file accepted, in bytes; a longer file (a misconfigured path pointing at something endless)
    /// fails with `Errno.fileTooLarge` instead of growing the buffer without bound.
    let maximumSize: Int

    private var buffer: [UInt8]
    /// Number of valid bytes in the buffer after the last successful `read()`.
    private(set) var count: Int = 0

    /// - Parameters:
    ///   - path: The file to read.
    ///   - initialCapacity: Starting buffer size in bytes (grows as needed). Default 4 KiB.
    ///   - maximumSize: Largest file accepted in bytes. Default 4 MiB.
    init(path: String, initialCapacity: Int = 4096, maximumSize: Int = 4 << 20) {
        self.pathString = path
        self.path = FilePath(path)
        self.maximumSize = max(1, maximumSize)
        self.buffer = [UInt8](repeating: 0, count: max(64, min(initialCapacity, self.maximumSize)))
    }

    /// Current buffer capacity in bytes (exposed for tests).
    var capacity: Int { buffer.count }

    /// Reads the whole file into the buffer. On error the previous contents are discarded (`count` is 0).
    /// - Throws: `Errno` from `open` or `read` (`.noSuchFileOrDirectory` when the file does not exist).
    mutating func read() throws(Errno) {
        count = 0
        let fd: Int32
        do {
            fd = try SystemFile.open(pathString, .read)
        } catch {
            throw Errno(rawValue: error.errno)
        }
        defer { SystemFile.close(fd) }
        var filled = 0
        while true {
            if filled == buffer.count {
                // Full: grow and keep reading. Procfs files of this kind are small (a few KiB, tens of
                // KiB for /proc/stat on machines with hundreds of cores), so doubling converges quickly.
                // One byte beyond `maximumSize` is enough to tell that the file is too large.
                let target = min(buffer.count * 2, maximumSize + 1)
                guard target > buffer.count else { throw .fileTooLarge }
                buffer.append(contentsOf: repeatElement(0, count: target - buffer.count))
            }
            let start = filled
            let path = pathString
            let read = buffer.withUnsafeMutableBytes { raw in
                Result { () throws(FileError) in
                    try SystemFile.readNext(fd, into: UnsafeMutableRawBufferPointer(rebasing: raw[start...]), path: path)
                }
            }
            let n: Int
            switch read {
            case .success(let count): n = count
            case .failure(let error): throw Errno(rawValue: error.errno)
            }
            if n == 0 { break }
            filled += n
            if filled > maximumSize { throw .fileTooLarge }
        }
        count = filled
    }

    /// Calls `body` with the bytes of the last successful `read()`.
    func withContents<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try buffer.withUnsafeBufferPointer { all in
            try body(UnsafeBufferPointer(rebasing: all[0..<count]))
        }
    }
}

extension Errno {
    /// Whether the error means that the file (or a directory on its path) is not there.
    var meansFileIsMissing: Bool {
        self == .noSuchFileOrDirectory || self == .notDirectory
    }
}
