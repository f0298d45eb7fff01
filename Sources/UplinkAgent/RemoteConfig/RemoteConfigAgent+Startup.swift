import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig
import UplinkTransport
import UplinkWire

// What the box starts with, before it runs and without the collector.

extension RemoteConfigAgent {
    /// What the agent starts with, before it runs and without the collector: the last-known-good set, checked again
    /// against the local file as it is now (keys, labels and `allow` may have changed). A trial marker left by a
    /// crash or a kill during a probation marks that revision bad (the last-known-good was never replaced); one left
    /// by a clean stop is dropped, so the revision is tried again; one whose revision is already the last-known-good
    /// (a stop between the switch and the marker's removal) means the probation passed, and is dropped.
    ///
    /// `atStart` false (a reload turned remote configuration on while the agent runs): what interrupted writes left
    /// is not removed, another writer may be at work (`RemoteConfigStore.prepare`).
    public static func startup(local: UplinkFile, store: RemoteConfigStore, logger: Logger, atStart: Bool = true) -> Startup {
        let now = WallClock.nowNanoseconds() / 1_000_000
        func status(_ state: RemoteConfigStatus.State, error: String? = nil) -> RemoteConfigStatus {
            RemoteConfigStatus(state: state, error: error, sinceMilliseconds: now)
        }
        guard local.remoteConfig.enabled else { return Startup(sources: [], set: nil, status: status(.disabled)) }
        do {
            try store.prepare(removingLeftovers: atStart)
        } catch {
            return Startup(sources: [], set: nil, status: status(.failed, error: "cannot prepare \(store.directory): \(error)"))
        }
        if store.isPinned { return Startup(sources: [], set: nil, status: status(.pinned)) }
        if case .valid(let trial) = store.trial() {
            if case .valid(let set) = store.lastKnownGood(), set.revision == trial.revision {
                // Stopped after the set passed its probation and became the last-known-good, before the marker was
                // removed (`apply`): the probation passed, so what that step had left to do is done here.
                let seen: RemoteConfigStore.Seen? =
                    switch store.seen() {
                    case .absent: RemoteConfigStore.Seen()
                    case .valid(let seen): seen
                    case .invalid: nil  // left as it is: `consider` refuses new documents until it is fixed
                    }
                if let seen {
                    try? store.saveSeen(seen.recording(set, generation: trial.generation, signed: local.remoteConfig.requireSignature))
                }
            } else if !trial.cleanShutdown {
                var bad = store.badRevisions().value ?? RemoteConfigStore.BadRevisions()
                let reason = "the agent stopped during the probation of this revision (a crash or a kill)"
                bad.add(RemoteConfigStore.BadRevision(
                    revision: trial.revision, serials: trial.serials, reason: reason, atMilliseconds: now))
                do {
                    try store.saveBadRevisions(bad)
                } catch {
                    logger.error("cannot record the revision that was on probation as bad: \(error)")
                }
                logger.warning("the last start ended during a remote configuration's probation: it is not tried again", metadata: [
                    "revision": "\(trial.revision.prefixed)",
                ])
            }
            try? store.removeTrial()
        }
        switch store.lastKnownGood() {
        case .absent:
            return Startup(sources: [], set: nil, status: status(.idle))
        case .invalid(let reason):
            logger.error("the last-known-good remote configuration cannot be used; starting with the local file only: \(reason)")
            return Startup(sources: [], set: nil, status: status(.failed, error: "last-known-good unusable: \(reason)"))
        case .valid(let set):
            let remoteSources: [AgentConfiguration.NamedSource]
            // No serial floor: the set's serials were checked when it was applied, and `seen.json` may since hold
            // the higher serials of a set that was tried and rolled back, which must not refuse the set it fell back to.
            switch sources(of: set, local: local, seen: nil, isNewApply: false) {
            case .success(let sources): remoteSources = sources
            case .failure(let refusal):
                logger.error("the last-known-good remote configuration does not pass the local file's checks; starting with the local file only: \(refusal.reason)")
                return Startup(sources: [], set: nil, status: status(.failed, error: refusal.reason))
            }
            var started = status(.applied)
            started.effective = set.revision.prefixed
            started.lastKnownGood = set.revision.prefixed
            started.generation = set.manifest.generation
            return Startup(sources: remoteSources, set: set, status: started)
        }
    }
}
