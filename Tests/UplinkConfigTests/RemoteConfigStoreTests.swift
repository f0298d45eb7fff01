import Foundation
import Testing
@testable import UplinkAgent
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig
import UplinkTestSupport

/// The remote configuration's state on disk: each file written and read back, the atomic switch of the
/// last-known-good set, and every damaged file read as `.invalid` (never a crash).
@Suite("Remote config: state on disk")
struct RemoteConfigStoreTests {
    static let key = SigningKeyFile.SigningKey(id: "ops", key: Ed25519.SecretKey(seed: [UInt8](repeating: 7, count: 32))!)

    /// A fresh store, prepared.
    func makeStore() throws -> RemoteConfigStore {
        let store = RemoteConfigStore(stateDirectory: try TestDirectories.make("uplink-remote-state"))
        try store.prepare()
        return store
    }

    /// A set of signed documents (`name: (yaml, serial)`), with the manifest naming them; those named in `unsigned`
    /// have no envelope (served by a collector with `require_signature: false`).
    static func documentSet(
        _ documents: [String: (String, UInt64)], generation: UInt64 = 1, unsigned: Set<String> = [],
        notAfter: Int64 = 4_000_000_000
    ) throws -> RemoteConfigStore.DocumentSet {
        var files: [String: ([UInt8], [UInt8]?)] = [:]
        var entries: [ConfigManifest.Document] = []
        for (name, (yaml, serial)) in documents {
            let content = Array(yaml.utf8)
            guard !unsigned.contains(name) else {
                files[name] = (content, nil)
                entries.append(.init(name: name, sha256: SHA256Digest(of: content), size: content.count, envelope: nil))
                continue
            }
            let envelope = ConfigEnvelope.sign(
                document: content, name: name, serial: serial, audience: .everyone, notAfter: notAfter, with: key)
            files[name] = (content, envelope.json)
            entries.append(.init(
                name: name, sha256: SHA256Digest(of: content), size: content.count,
                signatureSHA256: SHA256Digest(of: envelope.json), signatureSize: envelope.json.count))
        }
        let manifest = ConfigManifest(generation: generation, documents: entries)
        return try RemoteConfigStore.DocumentSet(manifest: manifest) { entry, part in
            part == .document ? files[entry.name]?.0 : files[entry.name]?.1 ?? nil
        }
    }

    /// A box's local file, agent `edge-1` with its state under `root`, a local `load` source, and `remote_config`
    /// trusting `root/ops.pub` and allowing `cpu` sources.
    static func localFile(root: String, requireSignature: Bool = true, url: String = "http://127.0.0.1:9") throws -> UplinkFile {
        let decoded = decode("""
            agent: { id: edge-1, state_dir: \(root)/state }
            uplink: { url: "\(url)" }
            sources: [{ name: load, type: load }]
            remote_config:
              enabled: true
              require_signature: \(requireSignature)
              trusted_keys: [\(root)/ops.pub]
              allow: { source_types: [cpu] }
            """)
        guard let file = decoded.value else { throw LocalFileInvalid(issues: decoded.issues.map(\.description)) }
        return file
    }

    func mode(_ path: String) -> Int? {
        (try? FileManager.default.attributesOfItem(atPath: path)[.posixPermissions]) as? Int
    }

    @Test("prepare: remote/, blobs/ and sets/ with mode 0700, again and again; a wrong mode is corrected")
    func prepare() throws {
        let store = try makeStore()
        for path in [store.directory, store.blobsDirectory, store.setsDirectory] { #expect(mode(path) == 0o700, "\(path)") }
        chmod(store.blobsDirectory, 0o755)
        try store.prepare()
        #expect(mode(store.blobsDirectory) == 0o700)
    }

    @Test("seen.json, bad.json, trial.json and pin: absent, then written and read back (mode 0600)")
    func roundTrips() throws {
        let store = try makeStore()
        #expect(store.seen() == .absent)
        #expect(store.badRevisions() == .absent)
        #expect(store.trial() == .absent)
        #expect(!store.isPinned)

        let digest = SHA256Digest(of: Array("x".utf8))
        let seen = RemoteConfigStore.Seen(highestGeneration: 17, serials: ["base": .init(serial: 3, sha256: digest)])
        try store.saveSeen(seen)
        #expect(store.seen() == .valid(seen))
        #expect(mode(store.seenPath) == 0o600)

        var bad = RemoteConfigStore.BadRevisions()
        bad.add(.init(revision: digest, serials: ["base": 3], reason: "modbus: exit status 127", atMilliseconds: 1_795_638_684_872))
        try store.saveBadRevisions(bad)
        #expect(store.badRevisions() == .valid(bad))

        let trial = RemoteConfigStore.Trial(revision: digest, generation: 17, startedAtMilliseconds: 1_795_638_684_000)
        try store.saveTrial(trial)
        #expect(store.trial() == .valid(trial))
        var clean = trial
        clean.cleanShutdown = true
        clean.serials = ["base": 3, "gpu": 1]
        try store.saveTrial(clean)
        #expect(store.trial() == .valid(clean))
        // A marker without serials (as written before they were added) reads with none.
        try AtomicFile.write(Array(#"{"clean_shutdown":false,"generation":17,"rev":"\#(digest.prefixed)","started_at_ms":5,"version":1}"#.utf8), to: store.trialPath)
        #expect(store.trial() == .valid(.init(revision: digest, generation: 17, startedAtMilliseconds: 5)))
        try store.removeTrial()
        #expect(store.trial() == .absent)
        try store.removeTrial()

        try store.pin(atMilliseconds: 1)
        #expect(store.isPinned)
        try store.unpin()
        #expect(!store.isPinned)
        try store.unpin()
        #expect(RemoteStateFiles.list(store.directory).sorted() == ["bad.json", "blobs", "seen.json", "sets"])
    }

    @Test("Seen.recording keeps the highest serial per name and the highest generation; serials only of verified signatures")
    func seenRecording() throws {
        let first = try Self.documentSet(["base": ("sources: {}\n", 5), "extra": ("sources: {}\n# x\n", 2)])
        let seen = RemoteConfigStore.Seen(highestGeneration: 20).recording(first, generation: 9)
        #expect(seen.highestGeneration == 20)
        #expect(seen.serials["base"]?.serial == 5)
        #expect(seen.serials["extra"]?.serial == 2)
        let older = try Self.documentSet(["base": ("sources: {}\n# old\n", 4)])
        #expect(seen.recording(older, generation: 21).serials["base"]?.serial == 5)
        #expect(seen.recording(older, generation: 21).highestGeneration == 21)
        // Signatures not verified (require_signature: false): the generation counts, the serials do not.
        let unverified = RemoteConfigStore.Seen().recording(first, generation: 30, signed: false)
        #expect(unverified.highestGeneration == 30 && unverified.serials.isEmpty)
    }

    @Test("Bad revisions: bounded, matched by revision or by the same serials; a new serial is tried")
    func badRevisions() throws {
        let set = try Self.documentSet(["base": ("sources: {}\n", 5)])
        var bad = RemoteConfigStore.BadRevisions()
        for index in 0..<(RemoteConfigStore.BadRevisions.limit + 5) {
            bad.add(.init(
                revision: SHA256Digest(of: [UInt8(index)]), serials: ["other": UInt64(index)], reason: "r\(index)",
                atMilliseconds: Int64(index)))
        }
        #expect(bad.entries.count == RemoteConfigStore.BadRevisions.limit)
        #expect(bad.entries.first?.reason == "r5")
        bad.add(.init(revision: set.revision, serials: set.serials, reason: String(repeating: "x", count: 5000), atMilliseconds: 1))
        #expect(bad.entries.last?.reason.count == RemoteConfigStore.BadRevisions.maximumReasonLength)
        #expect(bad.matching(revision: set.revision) != nil)
        #expect(bad.matching(set) != nil)
        // Re-signed with the same serial (another envelope, so another revision): still the bad set.
        let resigned = try Self.documentSet(["base": ("sources: {}\n", 5)], generation: 2)
        #expect(bad.matching(resigned) != nil)
        // A new serial: tried again.
        let fixed = try Self.documentSet(["base": ("sources: {}\n# fixed\n", 6)])
        #expect(bad.matching(fixed) == nil)
        #expect(bad.matching(revision: fixed.revision) == nil)
    }

    @Test("The last-known-good set: saved whole, switched atomically, read back and checked; older sets removed")
    func lastKnownGood() throws {
        let store = try makeStore()
        #expect(store.lastKnownGood() == .absent)
        #expect(store.lastKnownGoodRevision == nil)

        let first = try Self.documentSet(["base": ("sources:\n  a: {type: sysfs}\n", 1)])
        try store.saveLastKnownGood(first)
        #expect(store.lastKnownGood() == .valid(first))
        #expect(SymbolicLink.target(of: store.currentPath) == "sets/" + first.revision.hex)
        #expect(mode(store.setsDirectory + "/" + first.revision.hex) == 0o700)

        let second = try Self.documentSet(["base": ("sources:\n  a: {type: sysfs}\n", 1), "more": ("sources: {}\n", 4)])
        try store.saveLastKnownGood(second)
        #expect(store.lastKnownGood() == .valid(second))
        #expect(store.lastKnownGoodRevision == second.revision)
        #expect(RemoteStateFiles.list(store.setsDirectory) == [second.revision.hex])
        #expect(!RemoteStateFiles.list(store.directory).contains("current.tmp"))

        // The same set under a later generation: only its manifest changes.
        let later = try RemoteConfigStore.DocumentSet(manifest: ConfigManifest(generation: 30, documents: second.manifest.documents)) { entry, part in
            let document = second.documents.first { $0.name == entry.name }
            return part == .document ? document?.content : document?.envelopeJSON
        }
        try store.saveLastKnownGood(later)
        #expect(store.lastKnownGood().value?.manifest.generation == 30)

        try store.removeLastKnownGood()
        #expect(store.lastKnownGood() == .absent)
        #expect(RemoteStateFiles.list(store.setsDirectory).isEmpty)
    }

    @Test("A switch interrupted before its rename leaves the old set current; prepare() at start clears the leftovers, a later one does not")
    func interruptedSwitch() throws {
        let store = try makeStore()
        let first = try Self.documentSet(["base": ("sources: {}\n", 1)])
        let second = try Self.documentSet(["base": ("sources: {}\n# 2\n", 2)])
        try store.saveLastKnownGood(first)
        // What a crash leaves: a half-written set directory and a new symlink not yet renamed over `current`.
        let half = store.setsDirectory + "/" + second.revision.hex + ".tmp"
        try FileManager.default.createDirectory(atPath: half, withIntermediateDirectories: false)
        _ = FileManager.default.createFile(atPath: half + "/manifest.json", contents: Data("{\"vers".utf8))
        symlink("sets/" + second.revision.hex, store.currentPath + ".tmp")
        #expect(store.lastKnownGood() == .valid(first))

        // A look, or `uplink config pin` while the agent runs, leaves them: they may be another writer's.
        try AtomicFile.write([1], to: store.trialPath + ".tmp")
        try store.prepare(removingLeftovers: false)
        #expect(RemoteStateFiles.list(store.directory).sorted() == ["blobs", "current", "current.tmp", "sets", "trial.json.tmp"])
        #expect(RemoteStateFiles.list(store.setsDirectory).count == 2)
        // At the next start, prepare() removes the leftovers; the old set is still current.
        try store.prepare()
        #expect(RemoteStateFiles.list(store.setsDirectory) == [first.revision.hex])
        #expect(RemoteStateFiles.list(store.directory).sorted() == ["blobs", "current", "sets"])
        #expect(store.lastKnownGood() == .valid(first))

        try store.saveLastKnownGood(second)
        #expect(store.lastKnownGood() == .valid(second))
        #expect(RemoteStateFiles.list(store.setsDirectory) == [second.revision.hex])
    }

    @Test("A damaged last-known-good is invalid: a changed document, a missing envelope, a foreign symlink, a file")
    func damagedLastKnownGood() throws {
        let store = try makeStore()
        let set = try Self.documentSet(["base": ("sources: {}\n", 1)])
        let setPath = store.setsDirectory + "/" + set.revision.hex
        func expectInvalid(_ what: String) {
            guard case .invalid = store.lastKnownGood() else {
                Issue.record("\(what): \(store.lastKnownGood())")
                return
            }
        }

        try store.saveLastKnownGood(set)
        _ = FileManager.default.createFile(atPath: setPath + "/base.yaml", contents: Data("sources: {x}\n".utf8))
        expectInvalid("a changed document")
        // An invalid current set is written again whole, not only its manifest.
        try store.saveLastKnownGood(set)
        #expect(store.lastKnownGood() == .valid(set))

        try FileManager.default.removeItem(atPath: setPath + "/base.yaml.sig")
        expectInvalid("a missing envelope")
        try store.saveLastKnownGood(set)

        try FileManager.default.removeItem(atPath: store.currentPath)
        symlink("/etc", store.currentPath)
        expectInvalid("a symlink out of sets/")
        try FileManager.default.removeItem(atPath: store.currentPath)
        symlink("sets/" + SHA256Digest(of: [1]).hex, store.currentPath)
        expectInvalid("a symlink to a set that does not exist")
        try FileManager.default.removeItem(atPath: store.currentPath)
        _ = FileManager.default.createFile(atPath: store.currentPath, contents: Data("sets/x".utf8))
        expectInvalid("a regular file")
    }

    @Test("DocumentSet from downloaded blobs; readBlob checks digest and size; pruneBlobs keeps the set's")
    func blobs() throws {
        let store = try makeStore()
        let set = try Self.documentSet(["base": ("sources: {}\n", 1)])
        let document = set.documents[0]
        #expect(throws: RemoteConfigStore.DocumentSet.Invalid.self) {
            try RemoteConfigStore.DocumentSet(manifest: set.manifest, blobsIn: store)
        }
        try AtomicFile.write(document.content, to: store.blobPath(set.manifest.documents[0].sha256))
        try AtomicFile.write(document.envelopeJSON!, to: store.blobPath(set.manifest.documents[0].envelope!.sha256))
        let loaded = try RemoteConfigStore.DocumentSet(manifest: set.manifest, blobsIn: store)
        #expect(loaded == set)

        let stray = SHA256Digest(of: [9])
        try AtomicFile.write([9], to: store.blobPath(stray))
        try AtomicFile.write([9], to: store.blobPath(stray) + ".part")
        try AtomicFile.write([1, 2], to: store.blobPath(SHA256Digest(of: [1])))
        #expect(store.readBlob(stray, size: 1) == .valid([9]))
        #expect(store.readBlob(stray, size: 2) == .invalid("blob \(stray.hex.prefix(12))… is not the blob named (1 bytes)"))
        guard case .invalid = store.readBlob(SHA256Digest(of: [1]), size: 1) else {
            Issue.record("a blob longer than its size was read")
            return
        }
        #expect(store.readBlob(SHA256Digest(of: [2]), size: 1) == .absent)

        store.pruneBlobs(keeping: set.blobs)
        #expect(RemoteStateFiles.list(store.blobsDirectory).sorted() == set.blobs.map(\.hex).sorted())
    }

    @Test("A document without an envelope: the set holds none, saved and read back as the last-known-good without a .sig")
    func unsignedDocuments() throws {
        let store = try makeStore()
        let set = try Self.documentSet(
            ["base": ("sources: {}\n", 3), "lab": ("sources: {}\n# lab\n", 0)], unsigned: ["lab"])
        let lab = try #require(set.documents.first { $0.name == "lab" })
        #expect(lab.envelope == nil && lab.envelopeJSON == nil)
        // Only the document's blob, and the other document's two.
        #expect(set.blobs.count == 3)
        #expect(set.blobs.contains(set.manifest.documents.first { $0.name == "lab" }!.sha256))
        // No envelope asked for where the manifest lists none.
        let asked = try RemoteConfigStore.DocumentSet(manifest: set.manifest) { entry, part in
            #expect(!(entry.name == "lab" && part == .envelope), "an envelope was asked for an unsigned document")
            let document = set.documents.first { $0.name == entry.name }
            return part == .document ? document?.content : document?.envelopeJSON
        }
        #expect(asked == set)

        try store.saveLastKnownGood(set)
        #expect(store.lastKnownGood() == .valid(set))
        let setPath = store.setsDirectory + "/" + set.revision.hex
        #expect(RemoteStateFiles.list(setPath).sorted() == ["base.yaml", "base.yaml.sig", "lab.yaml", "manifest.json"])

        // No serial without an envelope: nothing recorded for it, and the set is known by its revision alone.
        let seen = RemoteConfigStore.Seen().recording(set, generation: 1)
        #expect(seen.serials.keys.sorted() == ["base"])
        #expect(set.serials.isEmpty)
        var bad = RemoteConfigStore.BadRevisions()
        bad.add(.init(revision: set.revision, serials: set.serials, reason: "failed", atMilliseconds: 1))
        #expect(bad.matching(set) != nil)
        let changed = try Self.documentSet(
            ["base": ("sources: {}\n", 3), "lab": ("sources: {}\n# lab, fixed\n", 0)], unsigned: ["lab"])
        #expect(bad.matching(changed) == nil, "another unsigned document with the same signed ones is another set")
    }

    @Test("An unsigned document runs only without require_signature; an envelope it comes with must still name it")
    func unsignedDocumentsAndTheLocalFile() throws {
        let root = try TestDirectories.make("uplink-remote-unsigned")
        try writePublicKey(to: root + "/ops.pub", id: "ops")
        func local(requireSignature: Bool) throws -> UplinkFile {
            try Self.localFile(root: root, requireSignature: requireSignature)
        }
        let document = "sources:\n  - { name: remote-cpu, type: cpu, interval: 10s }\n"
        let set = try Self.documentSet(["lab": (document, 0)], unsigned: ["lab"])
        typealias RemoteAgent = RemoteConfigAgent<ContinuousClock>

        switch RemoteAgent.sources(of: set, local: try local(requireSignature: true), seen: nil, isNewApply: true) {
        case .success: Issue.record("an unsigned document passed require_signature")
        case .failure(let refusal):
            #expect(refusal.reason == "document 'lab': the collector serves it without an envelope (unsigned), and "
                + "remote_config.require_signature is true: sign it with `uplink config sign` on the collector, or set "
                + "remote_config.require_signature: false on this box to accept unsigned documents")
        }
        let accepted = RemoteAgent.sources(of: set, local: try local(requireSignature: false), seen: nil, isNewApply: true)
        #expect((try? accepted.get())?.map(\.name) == ["remote-cpu"], "\(accepted)")

        // Signatures off, but the envelope names another document: refused (as the collector refuses to serve it).
        let content = Array(document.utf8)
        let envelope = ConfigEnvelope.sign(
            document: content, name: "other", serial: 1, audience: .everyone, notAfter: 4_000_000_000, with: Self.key)
        let mislabelled = try RemoteConfigStore.DocumentSet(manifest: ConfigManifest(generation: 1, documents: [
            .init(name: "lab", sha256: SHA256Digest(of: content), size: content.count,
                  signatureSHA256: SHA256Digest(of: envelope.json), signatureSize: envelope.json.count)
        ])) { _, part in part == .document ? content : envelope.json }
        switch RemoteAgent.sources(of: mislabelled, local: try local(requireSignature: false), seen: nil, isNewApply: true) {
        case .success: Issue.record("an envelope naming another document passed")
        case .failure(let refusal): #expect(refusal.reason == "document 'lab': the envelope signs document 'other', not 'lab'")
        }
    }
}

/// The test's local file did not decode.
struct LocalFileInvalid: Error {
    let issues: [String]
}
