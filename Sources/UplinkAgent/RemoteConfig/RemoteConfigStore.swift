import FoundationEssentials
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What reading one of the remote configuration's state files found. Garbage, a truncated or an oversized file is
/// `.invalid` with the reason, never a crash: the agent then runs on its local file (and reports why).
public enum StoredState<Value: Sendable>: Sendable {
    /// The file does not exist.
    case absent
    case valid(Value)
    /// The file exists but cannot be used.
    case invalid(String)

    /// The value when valid.
    public var value: Value? {
        if case .valid(let value) = self { return value }
        return nil
    }
}

extension StoredState: Equatable where Value: Equatable {}

/// The remote configuration's state on disk, all under `<state_dir>/remote/` (directories 0700, files 0600):
///
/// ```
/// remote/blobs/<hex>[.part]   downloads (RemoteConfigClient.downloadBlob)
/// remote/seen.json            the highest generation and, per document name, the highest serial seen
/// remote/bad.json             revisions that failed (bounded), not tried again until a document gets a new serial
/// remote/trial.json           present while a remote apply is on probation (a crash then means: roll back)
/// remote/current -> sets/<rev hex>/   the last-known-good set (manifest.json, <name>.yaml, <name>.yaml.sig)
/// remote/pin                  present = remote documents are ignored (`uplink config pin`)
/// ```
///
/// Every file is replaced by writing `<file>.tmp`, `fsync`, `rename`, `fsync` of the directory; the last-known-good
/// set is written whole into its own directory and then switched to by replacing the `current` symlink the same way.
/// Every read validates what it finds and returns `StoredState.invalid` for anything else.
///
/// The calls are blocking file system calls on small files: make them at start, or from NIO's thread pool.
public struct RemoteConfigStore: Sendable {
    /// A write that failed: the operation, the path and `errno` (the file layer's `FileError`).
    public typealias Failure = FileError

    /// The state files' format version.
    public static let version = 1
    /// `seen.json`, `bad.json`, `trial.json` and `pin` longer than this are invalid.
    public static let maximumStateFileBytes = 1024 * 1024

    /// `<state_dir>/remote`.
    public let directory: String

    public init(stateDirectory: String) {
        var base = stateDirectory
        while base.count > 1, base.hasSuffix("/") { base.removeLast() }
        directory = base + "/remote"
    }

    /// Where `RemoteConfigClient.downloadBlob` puts downloads.
    public var blobsDirectory: String { directory + "/blobs" }
    var setsDirectory: String { directory + "/sets" }
    var seenPath: String { directory + "/seen.json" }
    var badPath: String { directory + "/bad.json" }
    var trialPath: String { directory + "/trial.json" }
    var pinPath: String { directory + "/pin" }
    var currentPath: String { directory + "/current" }

    /// Creates `remote/`, `remote/blobs/` and `remote/sets/` (0700; existing ones are set to 0700) and, with
    /// `removingLeftovers`, removes what an interrupted write left (`*.tmp` in `remote/` and `sets/`): at the agent's
    /// start, before anything else of the store. Later callers (a look, `uplink config pin`) pass false.
    public func prepare(removingLeftovers: Bool = true) throws(Failure) {
        // The agent's state directory may not exist yet: remote sources start before the agent made it.
        try Directories.create(AtomicFile.parentDirectory(of: directory), mode: 0o755)
        for path in [directory, blobsDirectory, setsDirectory] {
            if mkdir(path, 0o700) != 0 {
                guard errno == EEXIST else { throw Failure(operation: "create directory", path: path, errno: errno) }
                var info = stat()
                guard stat(path, &info) == 0 else { throw Failure(operation: "stat", path: path, errno: errno) }
                guard info.st_mode & S_IFMT == S_IFDIR else { throw Failure(operation: "use directory", path: path, errno: ENOTDIR) }
                if info.st_mode & 0o7777 != 0o700, chmod(path, 0o700) != 0 {
                    throw Failure(operation: "chmod 0700", path: path, errno: errno)
                }
            }
        }
        // Only where no write can be under way: at the agent's start. A `.tmp` is another writer's file until
        // renamed (the agent's own at a look, `uplink config pin`'s while the agent runs).
        for parent in removingLeftovers ? [directory, setsDirectory] : [] {
            for name in RemoteStateFiles.list(parent) where name.hasSuffix(".tmp") {
                Directories.removeTree(parent + "/" + name)
            }
        }
        RemoteStateFiles.syncDirectory(directory)
    }

    // MARK: seen.json

    /// What was seen of the collector's assignments: no replay of an older manifest or document.
    public struct Seen: Sendable, Equatable {
        /// The highest manifest `generation` seen (a lower one is refused).
        public var highestGeneration: UInt64
        /// Per document name, the highest serial seen and the digest it came with (`EnvelopeVerifier.verify`'s `seen`).
        public var serials: [String: EnvelopeVerifier.SeenSerial]

        public init(highestGeneration: UInt64 = 0, serials: [String: EnvelopeVerifier.SeenSerial] = [:]) {
            self.highestGeneration = highestGeneration
            self.serials = serials
        }

        /// This with `set`'s documents and `generation` recorded: each serial above the one seen for its name replaces
        /// it (a document without an envelope has no serial and records nothing); the generation only grows. Serials
        /// count only where signatures were verified (`signed`): an envelope whose signature nobody checked could
        /// carry any serial, and would refuse signed documents once `require_signature` is turned on.
        public func recording(_ set: DocumentSet, generation: UInt64, signed: Bool = true) -> Seen {
            var copy = self
            copy.highestGeneration = max(highestGeneration, generation)
            for document in set.documents where signed {
                guard let envelope = document.envelope else { continue }
                if let seen = copy.serials[document.name], seen.serial >= envelope.serial { continue }
                copy.serials[document.name] = EnvelopeVerifier.SeenSerial(serial: envelope.serial, sha256: envelope.sha256)
            }
            return copy
        }
    }

    public func seen() -> StoredState<Seen> {
        RemoteStateFiles.readJSON(seenPath, as: SeenFile.self).flatMap { file -> StoredState<Seen> in
            guard file.version == Self.version else { return .invalid("version \(file.version), not \(Self.version)") }
            var serials: [String: EnvelopeVerifier.SeenSerial] = [:]
            for (name, entry) in file.documents {
                guard ConfigEnvelope.isValidName(name) else { return .invalid("'\(name)' is not a document name") }
                guard let digest = SHA256Digest(hex: entry.sha256) else {
                    return .invalid("document '\(name)': the digest is not 64 lower-case hex digits")
                }
                serials[name] = EnvelopeVerifier.SeenSerial(serial: entry.serial, sha256: digest)
            }
            return .valid(Seen(highestGeneration: file.highestGeneration, serials: serials))
        }
    }

    public func saveSeen(_ seen: Seen) throws(Failure) {
        let file = SeenFile(
            version: Self.version, highestGeneration: seen.highestGeneration,
            documents: seen.serials.mapValues { SeenFile.Entry(serial: $0.serial, sha256: $0.sha256) })
        try RemoteStateFiles.writeJSON(file, to: seenPath)
    }

    // MARK: bad.json

    /// A revision that failed (its probation, or its apply), and why.
    public struct BadRevision: Sendable, Equatable {
        public var revision: SHA256Digest
        /// Each document's serial in that revision: the same documents with the same serials are the same bad set,
        /// even when re-signed (a new envelope is a new revision, but not a new serial).
        public var serials: [String: UInt64]
        public var reason: String
        /// Milliseconds since the Unix epoch.
        public var atMilliseconds: Int64

        public init(revision: SHA256Digest, serials: [String: UInt64], reason: String, atMilliseconds: Int64) {
            self.revision = revision
            self.serials = serials
            self.reason = reason
            self.atMilliseconds = atMilliseconds
        }
    }

    /// The bad revisions, oldest first, at most `limit`.
    public struct BadRevisions: Sendable, Equatable {
        /// How many are kept; adding one more forgets the oldest.
        public static let limit = 32
        /// A reason is cut to this many characters.
        public static let maximumReasonLength = 1024

        public private(set) var entries: [BadRevision]

        public init(entries: [BadRevision] = []) {
            self.entries = Array(entries.suffix(Self.limit))
        }

        /// Remembers `bad` (replacing an entry of the same revision), forgetting the oldest beyond `limit`.
        public mutating func add(_ bad: BadRevision) {
            var bad = bad
            if bad.reason.count > Self.maximumReasonLength { bad.reason = String(bad.reason.prefix(Self.maximumReasonLength)) }
            entries.removeAll { $0.revision == bad.revision }
            entries.append(bad)
            if entries.count > Self.limit { entries.removeFirst(entries.count - Self.limit) }
        }

        /// The entry for `revision`, before its documents are downloaded.
        public func matching(revision: SHA256Digest) -> BadRevision? {
            entries.last { $0.revision == revision }
        }

        /// The entry `set` repeats: the same revision, or the same document names with the same serials (re-signed
        /// without a new serial). A set in which any document has a new serial (or that adds or drops a document) is
        /// not bad: it is tried.
        public func matching(_ set: DocumentSet) -> BadRevision? {
            let serials = set.serials
            return entries.last { $0.revision == set.revision || (!serials.isEmpty && $0.serials == serials) }
        }
    }

    public func badRevisions() -> StoredState<BadRevisions> {
        RemoteStateFiles.readJSON(badPath, as: BadFile.self).flatMap { file -> StoredState<BadRevisions> in
            guard file.version == Self.version else { return .invalid("version \(file.version), not \(Self.version)") }
            guard file.revisions.count <= BadRevisions.limit else {
                return .invalid("\(file.revisions.count) revisions, more than \(BadRevisions.limit)")
            }
            var entries: [BadRevision] = []
            for entry in file.revisions {
                guard let revision = SHA256Digest(prefixed: entry.rev) else { return .invalid("'\(entry.rev)' is not a revision") }
                guard entry.serials.keys.allSatisfy(ConfigEnvelope.isValidName) else {
                    return .invalid("revision \(entry.rev): a document name is not valid")
                }
                entries.append(BadRevision(revision: revision, serials: entry.serials, reason: entry.reason, atMilliseconds: entry.atMs))
            }
            return .valid(BadRevisions(entries: entries))
        }
    }

    public func saveBadRevisions(_ bad: BadRevisions) throws(Failure) {
        let file = BadFile(
            version: Self.version,
            revisions: bad.entries.map {
                BadFile.Entry(rev: $0.revision.prefixed, serials: $0.serials, reason: $0.reason, atMs: $0.atMilliseconds)
            })
        try RemoteStateFiles.writeJSON(file, to: badPath)
    }

    // MARK: trial.json

    /// The marker of a remote apply on probation. Found at start, it means the agent stopped during a probation.
    public struct Trial: Sendable, Equatable {
        public var revision: SHA256Digest
        public var generation: UInt64
        /// Milliseconds since the Unix epoch.
        public var startedAtMilliseconds: Int64
        /// Set when the agent stopped cleanly during the probation (inconclusive, rather than a crash).
        public var cleanShutdown: Bool
        /// Each document's serial in the set on probation (`DocumentSet.serials`): a crash marks the revision bad with
        /// them, so the same documents re-signed without a new serial stay bad too.
        public var serials: [String: UInt64]

        public init(
            revision: SHA256Digest, generation: UInt64, startedAtMilliseconds: Int64, cleanShutdown: Bool = false,
            serials: [String: UInt64] = [:]
        ) {
            self.revision = revision
            self.generation = generation
            self.startedAtMilliseconds = startedAtMilliseconds
            self.cleanShutdown = cleanShutdown
            self.serials = serials
        }
    }

    public func trial() -> StoredState<Trial> {
        RemoteStateFiles.readJSON(trialPath, as: TrialFile.self).flatMap { file -> StoredState<Trial> in
            guard file.version == Self.version else { return .invalid("version \(file.version), not \(Self.version)") }
            guard let revision = SHA256Digest(prefixed: file.rev) else { return .invalid("'\(file.rev)' is not a revision") }
            let serials = file.serials ?? [:]
            guard serials.keys.allSatisfy(ConfigEnvelope.isValidName) else { return .invalid("a document name is not valid") }
            return .valid(Trial(
                revision: revision, generation: file.generation, startedAtMilliseconds: file.startedAtMs,
                cleanShutdown: file.cleanShutdown, serials: serials))
        }
    }

    public func saveTrial(_ trial: Trial) throws(Failure) {
        let file = TrialFile(
            version: Self.version, rev: trial.revision.prefixed, generation: trial.generation,
            startedAtMs: trial.startedAtMilliseconds, cleanShutdown: trial.cleanShutdown, serials: trial.serials)
        try RemoteStateFiles.writeJSON(file, to: trialPath)
    }

    /// Removes the trial marker (the probation ended either way). No marker is not a failure.
    public func removeTrial() throws(Failure) {
        try RemoteStateFiles.remove(trialPath)
    }

    // MARK: pin

    /// Whether `pin` exists (also when it cannot be read: presence is what counts).
    public var isPinned: Bool {
        FileStatus(path: pinPath, followLinks: false) != nil
    }

    /// Creates `pin`: remote documents are ignored until `unpin()`.
    public func pin(atMilliseconds: Int64) throws(Failure) {
        try RemoteStateFiles.writeJSON(PinFile(version: Self.version, atMs: atMilliseconds), to: pinPath)
    }

    /// Removes `pin`. No pin is not a failure.
    public func unpin() throws(Failure) {
        try RemoteStateFiles.remove(pinPath)
    }

    // MARK: blobs

    /// `blobs/<hex>`.
    public func blobPath(_ digest: SHA256Digest) -> String { blobsDirectory + "/" + digest.hex }

    /// The downloaded blob `digest` of `size` bytes, checked against both.
    public func readBlob(_ digest: SHA256Digest, size: Int) -> StoredState<[UInt8]> {
        switch WholeFile.read(path: blobPath(digest), limit: size) {
        case .failure(let failure) where failure.isMissing: return .absent
        case .failure(let failure): return .invalid("blob \(digest.hex.prefix(12))…: \(failure.reasonDescription)")
        case .success(let bytes):
            guard bytes.count == size, SHA256Digest(of: bytes) == digest else {
                return .invalid("blob \(digest.hex.prefix(12))… is not the blob named (\(bytes.count) bytes)")
            }
            return .valid(bytes)
        }
    }

    /// Removes every download (finished or `.part`) whose digest is not in `keeping`.
    public func pruneBlobs(keeping: Set<SHA256Digest>) {
        let kept = Set(keeping.map(\.hex))
        for name in RemoteStateFiles.list(blobsDirectory) {
            let hex = name.hasSuffix(".part") ? String(name.dropLast(".part".count)) : name
            if !kept.contains(hex) { unlink(blobsDirectory + "/" + name) }
        }
        RemoteStateFiles.syncDirectory(blobsDirectory)
    }
}

extension StoredState {
    func flatMap<Other: Sendable>(_ transform: (Value) -> StoredState<Other>) -> StoredState<Other> {
        switch self {
        case .absent: .absent
        case .invalid(let reason): .invalid(reason)
        case .valid(let value): transform(value)
        }
    }
}

// MARK: The files' JSON

struct SeenFile: Codable {
    struct Entry: Codable {
        var serial: UInt64
        var sha256: String
    }
    var version: Int
    var highestGeneration: UInt64
    var documents: [String: Entry]

    enum CodingKeys: String, CodingKey {
        case version
        case highestGeneration = "highest_generation"
        case documents
    }
}

struct BadFile: Codable {
    struct Entry: Codable {
        var rev: String
        var serials: [String: UInt64]
        var reason: String
        var atMs: Int64

        enum CodingKeys: String, CodingKey {
            case rev, serials, reason
            case atMs = "at_ms"
        }
    }
    var version: Int
    var revisions: [Entry]
}

struct TrialFile: Codable {
    var version: Int
    var rev: String
    var generation: UInt64
    var startedAtMs: Int64
    var cleanShutdown: Bool
    /// Absent in markers written before it was added.
    var serials: [String: UInt64]?

    enum CodingKeys: String, CodingKey {
        case version, rev, generation, serials
        case startedAtMs = "started_at_ms"
        case cleanShutdown = "clean_shutdown"
    }
}

struct PinFile: Codable {
    var version: Int
    var atMs: Int64

    enum CodingKeys: String, CodingKey {
        case version
        case atMs = "at_ms"
    }
}
