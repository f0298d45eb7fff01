import UplinkCore
import UplinkFiles
import UplinkRemoteConfig

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The file a blob is downloaded into (`<dir>/<hex>.part`) and the one it is moved to once its SHA-256 is right
/// (`<dir>/<hex>`). Through the file layer (`SystemFile`); the caller runs the slow calls (hashing a prefix, `fsync`) on
/// NIO's thread pool.
struct BlobPartFile: Sendable {
    /// The descriptor of the open `.part` file (read-write, 0600).
    let descriptor: Int32
    let partPath: String
    let finalPath: String
    let directory: String

    /// The `.part` file's name for a blob.
    static func partPath(directory: String, digest: SHA256Digest) -> String { "\(directory)/\(digest.hex).part" }
    /// The downloaded blob's name.
    static func finalPath(directory: String, digest: SHA256Digest) -> String { "\(directory)/\(digest.hex)" }

    /// What is on disk before a download starts.
    enum Start: Sendable {
        /// `<dir>/<hex>` exists and hashes right: nothing to download.
        case present
        /// The `.part` file, opened, with `length` bytes already there and their hash state.
        case part(BlobPartFile, length: Int, hasher: SHA256Hasher)
    }

    /// Looks at `<dir>/<hex>` and `<dir>/<hex>.part`. A finished blob that hashes right is used; one that does not is
    /// removed. The `.part` is opened (created when missing); one longer than `size` is emptied; its prefix is hashed.
    /// A `.part` of exactly `size` bytes that hashes right is moved into place at once (a download cut between its
    /// last byte and the rename); one that does not is emptied.
    static func start(directory: String, digest: SHA256Digest, size: Int) throws(BlobDownloadFailure) -> Start {
        let finalPath = finalPath(directory: directory, digest: digest)
        let partPath = partPath(directory: directory, digest: digest)
        if case .success(let bytes) = WholeFile.read(path: finalPath, limit: size) {
            if bytes.count == size, SHA256Digest(of: bytes) == digest { return .present }
            unlink(finalPath)
        } else if access(finalPath, F_OK) == 0 {
            // Longer than the blob: not it.
            unlink(finalPath)
        }
        let descriptor: Int32
        do {
            descriptor = try SystemFile.open(partPath, .update(create: true), mode: 0o600)
        } catch {
            throw .file(error)
        }
        let file = BlobPartFile(descriptor: descriptor, partPath: partPath, finalPath: finalPath, directory: directory)
        let complete: Bool
        let length: Int
        let hasher: SHA256Hasher
        do throws(BlobDownloadFailure) {
            (complete, length, hasher) = try file.examine(digest: digest, size: size)
        } catch {
            file.close()
            throw error
        }
        if complete {
            try file.moveIntoPlace()
            return .present
        }
        return .part(file, length: length, hasher: hasher)
    }

    /// Whether the file already holds the whole blob; if not, the length of the prefix to resume after (0: start over,
    /// the file emptied) and its hash state.
    private func examine(digest: SHA256Digest, size: Int) throws(BlobDownloadFailure) -> (Bool, Int, SHA256Hasher) {
        var length = try length()
        if length > size {
            try truncate()
            length = 0
        }
        var hasher = SHA256Hasher()
        try hashPrefix(length, into: &hasher)
        guard length == size else { return (false, length, hasher) }
        let copy = hasher
        if copy.finalize() == digest { return (true, length, hasher) }
        try truncate()
        return (false, 0, SHA256Hasher())
    }

    func length() throws(BlobDownloadFailure) -> Int {
        do {
            return Int(try SystemFile.size(descriptor, path: partPath))
        } catch {
            throw .file(error)
        }
    }

    /// Empties the file (a restart from byte 0).
    func truncate() throws(BlobDownloadFailure) {
        do {
            try SystemFile.truncate(descriptor, to: 0, path: partPath)
        } catch {
            throw .file(error)
        }
    }

    /// Feeds the first `length` bytes of the file to `hasher`.
    func hashPrefix(_ length: Int, into hasher: inout SHA256Hasher) throws(BlobDownloadFailure) {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var offset = 0
        while offset < length {
            let wanted = min(chunk.count, length - offset)
            let read = chunk.withUnsafeMutableBytes { raw in
                Result { () throws(FileError) in
                    try SystemFile.read(
                        descriptor, into: UnsafeMutableRawBufferPointer(rebasing: raw[..<wanted]), at: Int64(offset),
                        path: partPath)
                }
            }
            let count: Int
            switch read {
            case .success(let read): count = read
            case .failure(let error): throw .file(error)
            }
            if count == 0 { throw .file(FileError(operation: "read", path: partPath, errno: EIO)) }
            hasher.update(chunk[..<count])
            offset += count
        }
    }

    /// Writes `bytes` at `offset`.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(BlobDownloadFailure) {
        do {
            try SystemFile.writeAll(descriptor, bytes, at: Int64(offset), path: partPath)
        } catch {
            throw .file(error)
        }
    }

    /// Flushes the `.part` to disk (kept for the next attempt) and closes it.
    func keep() {
        SystemFile.syncIgnoringFailure(descriptor)
        close()
    }

    /// Closes and removes the `.part` (its content is not the blob's).
    func discard() {
        close()
        unlink(partPath)
        Directories.sync(directory)
    }

    func close() {
        SystemFile.close(descriptor)
    }

    /// `fsync` the `.part`, close it, rename it to `<dir>/<hex>` and flush the directory. The file is closed afterwards
    /// whether this succeeded or not.
    func moveIntoPlace() throws(BlobDownloadFailure) {
        do {
            try SystemFile.sync(descriptor, path: partPath)
        } catch {
            close()
            throw .file(error)
        }
        close()
        guard rename(partPath, finalPath) == 0 else {
            throw .file(FileError(operation: "rename", path: partPath, errno: errno))
        }
        Directories.sync(directory)
    }
}
