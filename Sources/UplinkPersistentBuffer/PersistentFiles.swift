import UplinkFiles

/// Why the persistent buffer could not use its directory: the file operation that failed (its operation, path and
/// the system's reason), told as the persistent buffer's.
public struct PersistentBufferError: Error, CustomStringConvertible, Sendable {
    /// The file operation that failed.
    public let file: FileError

    /// The buffer's failure `file`.
    public init(_ file: FileError) {
        self.file = file
    }

    /// `persistent buffer: cannot <operation> <path>: <reason>`.
    public var description: String {
        "persistent buffer: \(file)"
    }
}

/// The persistent buffer's files through the file layer (`UplinkFiles`), with its modes (0700 directories, 0600
/// files: buffered records may be sensitive) and its error.
enum PersistentFiles {
    /// Creates `path` and its missing parents (mode 0700).
    static func makeDirectories(_ path: String) throws(PersistentBufferError) {
        do {
            try Directories.create(path, mode: 0o700)
        } catch {
            throw PersistentBufferError(error)
        }
    }

    /// The names of the entries in `directory`.
    static func list(_ directory: String) throws(PersistentBufferError) -> [String] {
        do {
            return try Directories.list(directory)
        } catch {
            throw PersistentBufferError(error)
        }
    }

    static func openForReading(_ path: String) throws(PersistentBufferError) -> Int32 {
        do {
            return try SystemFile.open(path, .read)
        } catch {
            throw PersistentBufferError(error)
        }
    }

    /// Opens `path` for appending, creating it (mode 0600) if needed.
    static func openForAppending(_ path: String) throws(PersistentBufferError) -> Int32 {
        do {
            return try SystemFile.open(path, .append, mode: 0o600)
        } catch {
            throw PersistentBufferError(error)
        }
    }

    /// The file's size, 0 when it cannot be read.
    static func size(_ fd: Int32) -> Int {
        Int((try? SystemFile.size(fd, path: "")) ?? 0)
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; returns how many were read (fewer at the end, or up to
    /// a read that failed).
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, count: Int, at offset: Int) -> Int {
        var done = 0
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[..<count])
        while done < count {
            guard let read = try? SystemFile.read(
                fd, into: UnsafeMutableRawBufferPointer(rebasing: target[done...]), at: Int64(offset + done), path: "")
            else { break }
            if read == 0 { break }
            done += read
        }
        return done
    }

    static func closeDescriptor(_ fd: Int32) {
        SystemFile.close(fd)
    }

    /// `fsync`, best effort (a failure shows at the next write or start).
    static func sync(_ fd: Int32) {
        SystemFile.syncIgnoringFailure(fd)
    }

    /// Flushes a directory's entries (after a create, rename or unlink), best effort.
    static func syncDirectory(_ path: String) {
        Directories.sync(path)
    }

    /// Replaces `path` with `bytes` (`AtomicFile.write`, mode 0600).
    static func writeAtomically(_ path: String, _ bytes: [UInt8]) throws(PersistentBufferError) {
        do {
            try AtomicFile.write(bytes, to: path, mode: 0o600)
        } catch {
            throw PersistentBufferError(error)
        }
    }

    /// Up to `limit` bytes from the start of `path` (fewer when it is shorter); nil when it cannot be opened.
    static func readWhole(_ path: String, limit: Int) -> [UInt8]? {
        guard let fd = try? SystemFile.open(path, .read) else { return nil }
        defer { SystemFile.close(fd) }
        var bytes = [UInt8](repeating: 0, count: limit)
        let count = bytes.withUnsafeMutableBytes { read(fd, into: $0, count: limit, at: 0) }
        return Array(bytes.prefix(count))
    }
}
