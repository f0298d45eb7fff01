import UplinkCore
import UplinkFiles
import UplinkRemoteConfig

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension RemoteConfigStore {
    /// A manifest with every document and envelope it names, each checked against the manifest's digest and size and
    /// each envelope parsed. (Not yet verified: signatures, audience, serials and the policy are the apply's checks,
    /// made again on the last-known-good at every start, since trusted keys and the policy may have changed. A
    /// document the manifest lists without an envelope has none here; whether it may run is the apply's check too.)
    public struct DocumentSet: Sendable, Equatable {
        /// One document of the set.
        public struct Document: Sendable, Equatable {
            public var name: String
            /// The YAML as signed.
            public var content: [UInt8]
            /// The envelope as downloaded (`<name>.yaml.sig`); nil for a document served unsigned.
            public var envelopeJSON: [UInt8]?
            public var envelope: ConfigEnvelope?
        }

        /// Which of a document's two blobs `init(manifest:read:)` asks for.
        public enum Part: Sendable, Equatable {
            case document
            case envelope
        }

        /// Why the bytes are not the set the manifest names.
        public struct Invalid: Error, Sendable, Equatable, CustomStringConvertible {
            public let reason: String
            public var description: String { reason }
        }

        public let manifest: ConfigManifest
        /// In the manifest's order (by name).
        public let documents: [Document]

        /// Collects the set: `read` returns the bytes of one part of one document (nil: missing); each must have the
        /// manifest's size and digest, and each envelope must parse. `.envelope` is asked for only for a document the
        /// manifest lists with one.
        public init(
            manifest: ConfigManifest, read: (ConfigManifest.Document, Part) -> [UInt8]?
        ) throws(Invalid) {
            var documents: [Document] = []
            for entry in manifest.documents {
                guard let content = read(entry, .document) else { throw Invalid(reason: "document '\(entry.name)' is missing") }
                guard content.count == entry.size, SHA256Digest(of: content) == entry.sha256 else {
                    throw Invalid(reason: "document '\(entry.name)' is not the one the manifest names")
                }
                guard let listed = entry.envelope else {
                    documents.append(Document(name: entry.name, content: content, envelopeJSON: nil, envelope: nil))
                    continue
                }
                guard let envelopeJSON = read(entry, .envelope) else {
                    throw Invalid(reason: "the envelope of '\(entry.name)' is missing")
                }
                guard envelopeJSON.count == listed.size, SHA256Digest(of: envelopeJSON) == listed.sha256 else {
                    throw Invalid(reason: "the envelope of '\(entry.name)' is not the one the manifest names")
                }
                let envelope: ConfigEnvelope
                do {
                    envelope = try ConfigEnvelope(json: envelopeJSON)
                } catch {
                    throw Invalid(reason: "the envelope of '\(entry.name)': \(error)")
                }
                documents.append(Document(name: entry.name, content: content, envelopeJSON: envelopeJSON, envelope: envelope))
            }
            self.manifest = manifest
            self.documents = documents
        }

        /// The set named by `manifest`, from the downloads in `store`'s `blobs/`.
        public init(manifest: ConfigManifest, blobsIn store: RemoteConfigStore) throws(Invalid) {
            try self.init(manifest: manifest) { entry, part in
                switch part {
                case .document: store.readBlob(entry.sha256, size: entry.size).value
                case .envelope: entry.envelope.flatMap { store.readBlob($0.sha256, size: $0.size).value }
                }
            }
        }

        public var revision: SHA256Digest { manifest.revision }

        /// Each document's serial, by name; empty when a document has no envelope (serials then say nothing of the
        /// whole set: such a set is known only by its revision).
        public var serials: [String: UInt64] {
            var serials: [String: UInt64] = [:]
            for document in documents {
                guard let envelope = document.envelope else { return [:] }
                serials[document.name] = envelope.serial
            }
            return serials
        }

        /// Every blob of the set (documents and envelopes): what `pruneBlobs(keeping:)` keeps.
        public var blobs: Set<SHA256Digest> {
            Set(manifest.blobs.map(\.sha256))
        }
    }

    // MARK: current (the last-known-good set)

    /// The revision `current` points to, without reading the set (nil: none, or not a set).
    public var lastKnownGoodRevision: SHA256Digest? {
        guard let target = SymbolicLink.target(of: currentPath), target.hasPrefix("sets/") else { return nil }
        return SHA256Digest(hex: target.dropFirst("sets/".count))
    }

    /// The last-known-good set, read back and checked: `current` must point to `sets/<rev hex>`, its manifest's
    /// revision must be that, and every file must be the one the manifest names.
    public func lastKnownGood() -> StoredState<DocumentSet> {
        var info = stat()
        guard lstat(currentPath, &info) == 0 else {
            return errno == ENOENT ? .absent : .invalid("\(currentPath): errno \(errno)")
        }
        guard info.st_mode & S_IFMT == S_IFLNK, let target = SymbolicLink.target(of: currentPath) else {
            return .invalid("\(currentPath) is not a symlink to a set")
        }
        guard target.hasPrefix("sets/"), let revision = SHA256Digest(hex: target.dropFirst("sets/".count)) else {
            return .invalid("\(currentPath) points to '\(target)', not to sets/<revision>")
        }
        let setPath = directory + "/" + target
        let manifest: ConfigManifest
        switch WholeFile.read(path: setPath + "/manifest.json", limit: ConfigManifest.maximumBytes) {
        case .failure(let failure): return .invalid("\(setPath)/manifest.json: \(failure.reasonDescription)")
        case .success(let bytes):
            do {
                manifest = try ConfigManifest(json: bytes)
            } catch {
                return .invalid("\(setPath)/manifest.json: \(error)")
            }
        }
        guard manifest.revision == revision else {
            return .invalid("\(setPath)/manifest.json names revision \(manifest.revision), not the set's")
        }
        do {
            return .valid(try DocumentSet(manifest: manifest) { entry, part in
                switch part {
                case .document:
                    try? WholeFile.read(path: Self.documentPath(setPath, entry.name), limit: entry.size).get()
                case .envelope:
                    try? WholeFile.read(path: Self.envelopePath(setPath, entry.name), limit: entry.envelope?.size ?? 0).get()
                }
            })
        } catch {
            return .invalid("\(setPath): \(error)")
        }
    }

    /// Makes `set` the last-known-good: writes it whole into `sets/<rev hex>.tmp/` (every file and the directory
    /// flushed), renames that to `sets/<rev hex>/`, then points `current` at it by renaming a new symlink over it and
    /// flushing `remote/`. A crash at any point leaves `current` pointing at either the old set or the new one, both
    /// complete. Other sets are removed afterwards. Saving the set that is current (and intact) again only replaces its
    /// manifest (the generation may have moved on; the documents are the same, by revision).
    public func saveLastKnownGood(_ set: DocumentSet) throws(Failure) {
        let hex = set.revision.hex
        let name = "sets/" + hex
        let final = directory + "/" + name
        if lastKnownGoodRevision == set.revision, lastKnownGood().value != nil {
            try RemoteStateFiles.writeAtomically(set.manifest.json, to: final + "/manifest.json")
            return
        }
        let temporary = final + ".tmp"
        Directories.removeTree(temporary)
        guard mkdir(temporary, 0o700) == 0 else { throw Failure(operation: "create directory", path: temporary, errno: errno) }
        try RemoteStateFiles.writeNew(set.manifest.json, to: temporary + "/manifest.json")
        for document in set.documents {
            try RemoteStateFiles.writeNew(document.content, to: Self.documentPath(temporary, document.name))
            if let envelopeJSON = document.envelopeJSON {
                try RemoteStateFiles.writeNew(envelopeJSON, to: Self.envelopePath(temporary, document.name))
            }
        }
        RemoteStateFiles.syncDirectory(temporary)
        Directories.removeTree(final)
        guard rename(temporary, final) == 0 else { throw Failure(operation: "rename", path: temporary, errno: errno) }
        RemoteStateFiles.syncDirectory(setsDirectory)

        let link = currentPath + ".tmp"
        unlink(link)
        guard symlink(name, link) == 0 else { throw Failure(operation: "create symlink", path: link, errno: errno) }
        guard rename(link, currentPath) == 0 else {
            let code = errno
            unlink(link)
            throw Failure(operation: "rename", path: link, errno: code)
        }
        RemoteStateFiles.syncDirectory(directory)
        for other in RemoteStateFiles.list(setsDirectory) where other != hex {
            Directories.removeTree(setsDirectory + "/" + other)
        }
        RemoteStateFiles.syncDirectory(setsDirectory)
    }

    /// Forgets the last-known-good (it no longer passes the checks at start): removes `current` and the sets.
    public func removeLastKnownGood() throws(Failure) {
        try RemoteStateFiles.remove(currentPath)
        for other in RemoteStateFiles.list(setsDirectory) { Directories.removeTree(setsDirectory + "/" + other) }
        RemoteStateFiles.syncDirectory(setsDirectory)
    }

    static func documentPath(_ setPath: String, _ name: String) -> String { setPath + "/" + name + ".yaml" }
    static func envelopePath(_ setPath: String, _ name: String) -> String { setPath + "/" + name + ".yaml.sig" }
}
