import Foundation
import Logging
import Testing
@testable import UplinkAgent
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig
import UplinkTestSupport

/// What `RemoteConfigAgent.startup` makes of the state files a stop leaves at each step of a probation's end, written
/// as that step leaves them (a kill cannot be aimed at one line, the files it leaves can).
@Suite("Remote config: the start after a stop at the end of a probation")
struct RemoteConfigStartupTests {
    typealias RemoteAgent = RemoteConfigAgent<ContinuousClock>

    /// A store in a fresh state directory, and a local file that trusts `RemoteConfigStoreTests.key` and allows `cpu`.
    func makeBox() throws -> (RemoteConfigStore, UplinkFile) {
        let root = try TestDirectories.make("uplink-remote-startup")
        let key = RemoteConfigStoreTests.key
        try AtomicFile.write(
            Array(SigningKeyFile.publicText(SigningKeyFile.TrustedKey(id: key.id, key: key.key.publicKey)).utf8),
            to: root + "/ops.pub")
        let local = try RemoteConfigStoreTests.localFile(root: root)
        let store = RemoteConfigStore(stateDirectory: root + "/state")
        try store.prepare()
        return (store, local)
    }

    /// A signed set of one `cpu` source, `serial` its document's serial.
    func cpuSet(serial: UInt64, comment: String = "") throws -> RemoteConfigStore.DocumentSet {
        try RemoteConfigStoreTests.documentSet(
            ["lab": ("sources:\n  - { name: remote-cpu, type: cpu, interval: 10s }\n\(comment)", serial)], generation: 4)
    }

    @Test("Stopped between the switch to the last-known-good and the marker's removal: the probation passed, the set runs, nothing is marked bad, its serial is recorded")
    func stoppedAfterTheSwitch() throws {
        let (store, local) = try makeBox()
        let set = try cpuSet(serial: 3)
        // What `apply` leaves after `saveLastKnownGood` and before `saveSeen` / `removeTrial`.
        try store.saveLastKnownGood(set)
        try store.saveTrial(.init(revision: set.revision, generation: 4, startedAtMilliseconds: 1, serials: set.serials))

        let startup = RemoteAgent.startup(local: local, store: store, logger: .init(label: "test"))
        #expect(startup.set == set)
        #expect(startup.sources.map(\.name) == ["remote-cpu"])
        #expect(startup.status.state == .applied && startup.status.error == nil, "\(startup.status)")
        #expect(startup.status.lastKnownGood == set.revision.prefixed)
        #expect(store.badRevisions().value?.matching(set) == nil, "the last-known-good was marked bad")
        #expect(store.trial() == .absent)
        let seen = try #require(store.seen().value)
        #expect(seen.serials["lab"]?.serial == 3, "the serial of the set that passed is recorded: no replay of an older one")
        #expect(seen.highestGeneration == 4)
    }

    @Test("A last-known-good whose envelopes have expired since it was applied still runs at the next start: not-after is for new applies only")
    func expiredLastKnownGoodRuns() throws {
        let (store, local) = try makeBox()
        // Signed to expire in 2001: long past, as a set applied years ago and never replaced would be.
        let set = try RemoteConfigStoreTests.documentSet(
            ["lab": ("sources:\n  - { name: remote-cpu, type: cpu, interval: 10s }\n", 3)], generation: 4,
            notAfter: 1_000_000_000)
        try store.saveLastKnownGood(set)

        let startup = RemoteAgent.startup(local: local, store: store, logger: .init(label: "test"))
        #expect(startup.set == set, "\(startup.status)")
        #expect(startup.sources.map(\.name) == ["remote-cpu"])
        #expect(startup.status.state == .applied && startup.status.error == nil, "\(startup.status)")
    }

    @Test("Stopped during the probation of a newer set: that one is marked bad, the last-known-good runs")
    func stoppedDuringProbation() throws {
        let (store, local) = try makeBox()
        let good = try cpuSet(serial: 3)
        let trial = try cpuSet(serial: 4, comment: "# newer\n")
        try store.saveLastKnownGood(good)
        try store.saveTrial(.init(revision: trial.revision, generation: 5, startedAtMilliseconds: 1, serials: trial.serials))

        let startup = RemoteAgent.startup(local: local, store: store, logger: .init(label: "test"))
        #expect(startup.set == good)
        #expect(startup.status.state == .applied)
        let bad = try #require(store.badRevisions().value)
        #expect(bad.matching(trial)?.reason.contains("stopped during the probation") == true)
        #expect(bad.matching(good) == nil)
        #expect(store.trial() == .absent)
    }

    @Test("After a newer set was rolled back (its serial recorded in seen.json), the next start still runs the older last-known-good")
    func lastKnownGoodRunsBelowASerialSeenLater() throws {
        let (store, local) = try makeBox()
        let good = try cpuSet(serial: 4)
        let rolledBack = try cpuSet(serial: 5, comment: "# newer, failed its probation\n")
        // What `apply` leaves after a failed probation: the last-known-good as it was, the newer serial seen, the
        // revision bad, no trial marker.
        try store.saveLastKnownGood(good)
        try store.saveSeen(RemoteConfigStore.Seen().recording(good, generation: 4).recording(rolledBack, generation: 5))
        var bad = RemoteConfigStore.BadRevisions()
        bad.add(.init(revision: rolledBack.revision, serials: rolledBack.serials, reason: "failed", atMilliseconds: 1))
        try store.saveBadRevisions(bad)

        let startup = RemoteAgent.startup(local: local, store: store, logger: .init(label: "test"))
        #expect(startup.set == good, "\(startup.status)")
        #expect(startup.sources.map(\.name) == ["remote-cpu"])
        #expect(startup.status.state == .applied && startup.status.error == nil, "\(startup.status)")
        #expect(store.seen().value?.serials["lab"]?.serial == 5, "the floor for new applies stays")
    }
}
