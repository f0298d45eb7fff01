import Foundation
import Testing
@testable import UplinkAgent
import UplinkCore
import UplinkRemoteConfig
import UplinkTestSupport

/// Every state file damaged on purpose (seeded, bounded): cut at every kind of length, bytes flipped, replaced by
/// random bytes, grown past the limit. Reading must give `.invalid` (or, for a change that happens to leave valid
/// JSON of the right shape, `.valid`), never `.absent`, a crash or an exit.
@Suite("Remote config: damaged state files", .computeBound)
struct RemoteConfigStoreFuzzTests {
    /// xorshift64*: the same damage every run.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        init(seed: UInt64) { state = seed | 1 }
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 0x2545_F491_4F6C_DD1D
        }
    }

    /// The damaged versions of `valid` to try: every truncation for short files (else a sample), flips, random bytes.
    static func damaged(_ valid: [UInt8], seed: UInt64, count: Int = 200) -> [(kind: String, bytes: [UInt8])] {
        var generator = Generator(seed: seed)
        var cases: [(String, [UInt8])] = []
        let cuts = valid.count <= 400 ? Array(0..<valid.count) : (0..<count).map { _ in Int.random(in: 0..<valid.count, using: &generator) }
        for cut in cuts { cases.append(("truncated at \(cut)", Array(valid.prefix(cut)))) }
        for _ in 0..<count {
            var bytes = valid
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            cases.append(("flipped", bytes))
        }
        for _ in 0..<count / 4 {
            let length = Int.random(in: 0...2048, using: &generator)
            cases.append(("random", (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }))
        }
        cases.append(("oversized", valid + [UInt8](repeating: 0x20, count: RemoteConfigStore.maximumStateFileBytes)))
        cases.append(("nested", Array(String(repeating: "[", count: 100_000).utf8)))
        return cases
    }

    /// Writes each damaged version of `path`'s valid content (plainly: no fsync needed to test the reader) and reads
    /// it with `read`.
    func fuzz<V: Sendable>(
        _ path: String, seed: UInt64, read: () -> StoredState<V>
    ) throws {
        let valid = try #require(FileManager.default.contents(atPath: path).map { Array($0) })
        var invalid = 0
        for (kind, bytes) in Self.damaged(valid, seed: seed) {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            switch read() {
            case .absent: Issue.record("\(path), \(kind): read as absent")
            case .invalid: invalid += 1
            case .valid:
                // A cut that keeps the whole JSON object (only the final newline gone) is still the file.
                if kind.hasPrefix("truncated"), bytes.count < valid.count - 1 {
                    Issue.record("\(path), \(kind): a truncated file was read as valid")
                }
                if kind == "oversized" || kind == "nested" { Issue.record("\(path), \(kind): read as valid") }
            }
        }
        #expect(invalid > 0)
    }

    func makeStore() throws -> RemoteConfigStore {
        let store = RemoteConfigStore(stateDirectory: try TestDirectories.make("uplink-remote-fuzz"))
        try store.prepare()
        return store
    }

    @Test("seen.json, bad.json, trial.json damaged: invalid, never a crash")
    func stateFiles() throws {
        let store = try makeStore()
        let digest = SHA256Digest(of: [1, 2, 3])
        try store.saveSeen(.init(highestGeneration: 9, serials: ["base": .init(serial: 3, sha256: digest), "b.2": .init(serial: 1, sha256: digest)]))
        var bad = RemoteConfigStore.BadRevisions()
        bad.add(.init(revision: digest, serials: ["base": 3], reason: "exec: exit status 127", atMilliseconds: 5))
        try store.saveBadRevisions(bad)
        try store.saveTrial(.init(revision: digest, generation: 9, startedAtMilliseconds: 77))

        try fuzz(store.seenPath, seed: 1) { store.seen() }
        try fuzz(store.badPath, seed: 2) { store.badRevisions() }
        try fuzz(store.trialPath, seed: 3) { store.trial() }
    }

    @Test("The last-known-good set's manifest, documents and envelopes damaged: invalid or the same documents, never a crash")
    func lastKnownGood() throws {
        let store = try makeStore()
        let set = try RemoteConfigStoreTests.documentSet(["base": ("sources:\n  cpu: {type: sysfs}\n", 3), "x": ("sources: {}\n", 1)])
        try store.saveLastKnownGood(set)
        let setPath = store.setsDirectory + "/" + set.revision.hex
        for (index, file) in ["manifest.json", "base.yaml", "base.yaml.sig", "x.yaml.sig"].enumerated() {
            let path = setPath + "/" + file
            let valid = try #require(FileManager.default.contents(atPath: path).map { Array($0) })
            for (kind, bytes) in Self.damaged(valid, seed: 10 + UInt64(index), count: 100) where bytes != valid {
                try Data(bytes).write(to: URL(fileURLWithPath: path))
                // A damaged set never reads as other documents: a change the checks let through (a digit of the
                // manifest's generation, its final newline) leaves the documents and envelopes as signed.
                switch store.lastKnownGood() {
                case .invalid: break
                case .valid(let read): #expect(read.documents == set.documents, "\(file), \(kind)")
                case .absent: Issue.record("\(file), \(kind): read as absent")
                }
            }
            try Data(valid).write(to: URL(fileURLWithPath: path))
            #expect(store.lastKnownGood() == .valid(set))
        }
    }
}
