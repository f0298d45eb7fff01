import Foundation
import Testing
@testable import UplinkAgent
import UplinkCore
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

    /// A set of signed documents (`name: (yaml, serial)`), with the manifest naming them.
    static func documentSet(_ documents: [String: (String, UInt64)], generation: UInt64 = 1) throws -> RemoteConfigStore.DocumentSet {
        var files: [String: ([UInt8], [UInt8])] = [:]
        var entries: [ConfigManifest.Document] = []
        for (name, (yaml, serial)) in documents {
            let content = Array(yaml.utf8)
            let envelope = ConfigEnvelope.sign(
                document: content, name: name, serial: serial, audience: .everyone, notAfter: 4_000_000_000, with: key)
            files[name] = (content, envelope.json)
            entries.append(.init(
                name: name, sha256: SHA256Digest(of: content), size: content.count,
                signatureSHA256: SHA256Digest(of: envelope.json), signatureSize: envelope.json.count))
        }
        let manifest = ConfigManifest(generation: generation, documents: entries)
        return try RemoteConfigStore.DocumentSet(manifest: manifest) { entry, part in
            part == .document ? files[entry.name]?.0 : files[entry.name]?.1
        }
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

    @Test("Seen.recording keeps the highest serial per name and the highest generation")
    func seenRecording() throws {
        let first = try Self.documentSet(["base": ("sources: {}\n", 5), "extra": ("sources: {}\n# x\n", 2)])
        let seen = RemoteConfigStore.Seen(highestGeneration: 20).recording(first, generation: 9)
        #expect(seen.highestGeneration == 20)
        #expect(seen.serials["base"]?.serial == 5)
        #expect(seen.serials["extra"]?.serial == 2)
        let older = try Self.documentSet(["base": ("sources: {}\n# old\n", 4)])
        #expect(seen.recording(older, generation: 21).serials["base"]?.serial == 5)
        #expect(seen.recording(older, generation: 21).highestGeneration == 21)
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
        #expect(RemoteStateFiles.symlinkTarget(store.currentPath) == "sets/" + first.revision.hex)
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

    @Test("A switch interrupted before its rename leaves the old set current; prepare() clears the leftovers")
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

        // At the next start, prepare() removes the leftovers; the old set is still current.
        try AtomicFile.write([1], to: store.trialPath + ".tmp")
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
        try AtomicFile.write(document.content, to: store.blobPath(document.envelope.sha256))
        try AtomicFile.write(document.envelopeJSON, to: store.blobPath(set.manifest.documents[0].signatureSHA256))
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
}
