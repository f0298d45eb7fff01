import FoundationEssentials
import UplinkCore
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The few file operations the remote configuration's state needs, through the file layer (`UplinkFiles`): JSON files
/// replaced atomically, whole files written and flushed, directories listed, flushed and removed.
enum RemoteStateFiles {
    typealias Failure = RemoteConfigStore.Failure

    /// The JSON in `path` decoded, or why it cannot be: absent, unreadable, longer than
    /// `RemoteConfigStore.maximumStateFileBytes`, not JSON, or not of this shape.
    static func readJSON<Value: Decodable & Sendable>(_ path: String, as type: Value.Type) -> StoredState<Value> {
        let bytes: [UInt8]
        switch WholeFile.read(path: path, limit: RemoteConfigStore.maximumStateFileBytes) {
        case .failure(let failure) where failure.isMissing: return .absent
        case .failure(let failure): return .invalid("\(path): \(failure.reasonDescription)")
        case .success(let contents): bytes = contents
        }
        do {
            return .valid(try JSONDecoder().decode(Value.self, from: Data(bytes)))
        } catch {
            return .invalid("\(path): not valid JSON of the expected shape (\(bytes.count) bytes)")
        }
    }

    /// Replaces `path` with `value` as JSON (keys sorted, a final newline), mode 0600, atomically.
    static func writeJSON(_ value: some Encodable, to path: String) throws(Failure) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do {
            data = try encoder.encode(value)
        } catch {
            throw Failure(operation: "encode", path: path, errno: EINVAL)
        }
        try writeAtomically(Array(data) + [UInt8(ascii: "\n")], to: path)
    }

    /// `AtomicFile.write` with mode 0600.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws(Failure) {
        try AtomicFile.write(bytes, to: path, mode: 0o600)
    }

    /// Creates `path` (mode 0600, it must not exist), writes `bytes` and flushes it. The caller flushes the directory.
    static func writeNew(_ bytes: [UInt8], to path: String) throws(Failure) {
        let fd = try SystemFile.open(path, .createNew, mode: 0o600, operation: "create")
        defer { SystemFile.close(fd) }
        try SystemFile.writeAll(fd, bytes, path: path)
        try SystemFile.sync(fd, path: path)
    }

    /// Removes the file `path` and flushes its directory; a missing file is not a failure.
    static func remove(_ path: String) throws(Failure) {
        guard unlink(path) == 0 else {
            if errno == ENOENT { return }
            throw Failure(operation: "remove", path: path, errno: errno)
        }
        syncDirectory(AtomicFile.parentDirectory(of: path))
    }

    /// The names in `directory` (without `.` and `..`); empty when it cannot be read.
    static func list(_ directory: String) -> [String] {
        (try? Directories.list(directory)) ?? []
    }

    /// Flushes a directory's entries (after a create, rename or unlink), best effort.
    static func syncDirectory(_ path: String) {
        Directories.sync(path)
    }
}
