import FoundationEssentials
import Synchronization
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `<data_dir>/remote-config-halts.json`: the halted rollouts of the served generation, so that a restarted
/// collector keeps them halted (docs/remote-config.md, "Halts"). Replaced atomically at every halt and when a higher
/// generation lifts them; read once at start.
///
/// ```json
/// {"generation":17,"halts":[{"keep":["edge-1"],"reason":"edge-2: tail app: permission denied","rollout":"modbus"}],"version":1}
/// ```
final class RemoteConfigHaltsFile: Sendable {
    /// The file's contents.
    struct Snapshot: Codable, Sendable, Equatable {
        /// The format; only 1.
        var version = 1
        /// The generation of `assignments.yaml` the halts belong to: restored only while it is the one served.
        var generation: UInt64
        var halts: [Entry]

        init(generation: UInt64, halts: [Entry]) {
            self.generation = generation
            self.halts = halts
        }
    }

    /// One halted rollout.
    struct Entry: Codable, Sendable, Equatable {
        /// The rule (and rollout) name.
        var rollout: String
        /// Why it halted: the failing agents and their errors.
        var reason: String
        /// The agents that keep the rollout's new documents.
        var keep: [String]
    }

    /// Largest file read (a keep set of every reporting agent fits many times over).
    static let maximumBytes = 16 << 20

    /// Where the file is: `CollectorConfiguration.remoteConfigHaltsFile`.
    let path: String
    /// The version of the newest snapshot written: an older one that comes late is not written over it.
    private let written = Mutex<UInt64>(0)

    /// The file at `path`; nothing is read or written until asked.
    init(path: String) {
        self.path = path
    }

    /// The saved snapshot; nil when there is none; why not when it cannot be read or is not of this shape.
    func read() -> Result<Snapshot?, FileProblem> {
        let bytes: [UInt8]
        switch WholeFile.read(path: path, limit: Self.maximumBytes) {
        case .failure(let failure) where failure.isMissing: return .success(nil)
        case .failure(let failure): return .failure(FileProblem(text: failure.reasonDescription))
        case .success(let contents): bytes = contents
        }
        do {
            let snapshot = try JSONDecoder().decode(Snapshot.self, from: Data(bytes))
            guard snapshot.version == 1 else { return .failure(FileProblem(text: "unknown version \(snapshot.version)")) }
            return .success(snapshot)
        } catch {
            return .failure(FileProblem(text: "not valid JSON of the expected shape (\(bytes.count) bytes)"))
        }
    }

    /// Replaces the file with `snapshot` (mode 0600, atomically: `AtomicFile`), unless a snapshot with a higher
    /// `version` was written already.
    func write(_ snapshot: Snapshot, version: UInt64) throws(FileError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding these plain values cannot fail.
        let bytes = ((try? encoder.encode(snapshot)).map(Array.init) ?? []) + [UInt8(ascii: "\n")]
        try written.withLock { (newest: inout UInt64) throws(FileError) in
            guard version > newest else { return }
            try AtomicFile.write(bytes, to: path, mode: 0o600)
            newest = version
        }
    }

    /// Removes the file, if there is one (best effort: a stale file is never restored for another generation).
    func remove() {
        if unlink(path) == 0 { Directories.sync(AtomicFile.parentDirectory(of: path)) }
    }

    /// Why the file could not be read.
    struct FileProblem: Error, CustomStringConvertible {
        let text: String
        var description: String { text }
    }
}
