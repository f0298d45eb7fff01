import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig
import UplinkTransport
import UplinkWire

// Applying a set and its probation: keep it as the last-known-good, or roll back and remember it as bad.

extension RemoteConfigAgent {
    /// Applies `set`, runs its probation, and keeps it or rolls back. `.failed` when it could not begin (the trial
    /// marker could not be written: tried again soon).
    func apply(
        _ set: RemoteConfigStore.DocumentSet, sources: [AgentConfiguration.NamedSource], local: UplinkFile,
        seen: RemoteConfigStore.Seen, bad: inout RemoteConfigStore.BadRevisions
    ) async -> Look {
        let revision = set.revision
        // A reload or a pin since the look began: the set was checked against the old file. The next look, at once,
        // checks it again.
        if state.withLock({ $0.localFileChanged }) || store.isPinned {
            wake.signal()
            return .failed
        }
        let nowMilliseconds = WallClock.nowNanoseconds() / 1_000_000
        /// The trial marker of this probation; `cleanShutdown`: it ended without a verdict, to be tried again.
        func trial(cleanShutdown: Bool = false) -> RemoteConfigStore.Trial {
            RemoteConfigStore.Trial(
                revision: revision, generation: set.manifest.generation, startedAtMilliseconds: nowMilliseconds,
                cleanShutdown: cleanShutdown, serials: set.serials)
        }
        do {
            let marker = trial()
            try await BlockingFileWork.run { [store] in try store.saveTrial(marker) }
        } catch {
            // Without the marker a crash during probation would not roll back: do not start one.
            update { $0.error = "cannot write the trial marker: \(error)" }
            return .failed
        }
        let localNames = Set(local.sources.map(\.name))
        let before = reading(watched: [], localNames: localNames)
        let previous = await configuration.remote
        // `applying` before the swap: a status read while the sources change never says `applied` of the revision
        // being replaced.
        update {
            $0.state = .applying
            $0.effective = revision.prefixed
            $0.error = nil
        }
        let change = await configuration.replaceRemote(with: sources)
        let remoteNames = Set(sources.map(\.name))
        let watched = (change.plan.added + change.plan.changed).filter { remoteNames.contains($0) }
        logger.info("remote configuration applied; on probation", metadata: [
            "revision": "\(revision.prefixed)", "added": "\(change.plan.added)", "changed": "\(change.plan.changed)",
            "removed": "\(change.plan.removed)", "probation": "\(local.remoteConfig.probation)",
        ])
        _ = await reportStatus()
        let probation = Probation(
            watched: watched, window: local.remoteConfig.probation, swapSequence: before.lastAppended,
            localDropsAtSwap: before.localDrops, uptime: clock.now - created, started: clock.now)
        // A pin, or a reload after which the set may not run (remote configuration off, a key or an allowed path
        // removed), must not wait for the end of a probation of up to an hour: either ends it, within a reading. A
        // reload that still allows the set lets the probation go on (a box reloaded more often than its probation
        // would otherwise never pass one); the next look applies what the new file gives the sources.
        var allowedUnder: UplinkFile?
        let verdict = await probation.run(
            clock: clock,
            interrupted: { [self] in
                if store.isPinned { return true }
                guard state.withLock({ $0.localFileChanged }) else { return false }
                let now = await configuration.local
                if now == allowedUnder { return false }
                guard now.remoteConfig.enabled, case .success = Self.sources(of: set, local: now, seen: nil, isNewApply: false) else {
                    return true
                }
                allowedUnder = now
                return false
            }
        ) { [self] in reading(watched: watched, localNames: localNames) }
        let seenNow = seen.recording(set, generation: set.manifest.generation, signed: local.remoteConfig.requireSignature)
        switch verdict {
        case .interrupted:
            // What ran before runs again, nothing is marked, and the next look (at once: the reload woke it)
            // decides under the new file or the pin, applying the set anew if it is still assigned and allowed.
            _ = await configuration.replaceRemote(with: previous)
            do {
                try await BlockingFileWork.run { [store] in try store.removeTrial() }
            } catch {
                logger.warning("cannot remove the trial marker of an interrupted probation: \(error)")
            }
            let restored = state.withLock { $0.effective?.revision }
            logger.info("remote configuration's probation interrupted by a reload or a pin; what ran before runs again", metadata: [
                "revision": "\(revision.prefixed)",
            ])
            update {
                $0.state = restored == nil ? .idle : .applied
                $0.effective = restored?.prefixed
                $0.error = nil
            }
            // Looked at again at once (a pin alone woke nothing), the manifest fetched whole.
            wake.signal()
            return .failed
        case .pending:
            // Stopped during the probation: inconclusive, tried again after the next start.
            // Here, not on the thread pool: the task is being cancelled, and the agent is stopping anyway.
            do {
                try store.saveTrial(trial(cleanShutdown: true))
            } catch {
                logger.warning("stopped during a probation, and cannot mark it as a clean stop: \(error)")
            }
        case .passed(let skipped):
            do {
                try await BlockingFileWork.run { [store] in
                    try store.saveLastKnownGood(set)
                    try store.saveSeen(seenNow)
                    try store.removeTrial()
                    store.pruneBlobs(keeping: set.blobs)
                }
            } catch {
                logger.error("the remote configuration passed its probation but cannot be kept: \(error)")
                // The marker must not say "stopped during the probation" at the next start: that would mark the set
                // that passed as bad. Marked a clean stop, the revision is tried again after the start.
                let inconclusive = trial(cleanShutdown: true)
                try? await BlockingFileWork.run { [store] in try store.saveTrial(inconclusive) }
            }
            state.withLock { $0.effective = set }
            Self.count("applied")
            logger.info("remote configuration passed its probation", metadata: [
                "revision": "\(revision.prefixed)", "skipped": "\(skipped)",
            ])
            update {
                $0.state = .applied
                $0.lastKnownGood = revision.prefixed
                $0.error = nil
            }
        case .failed(let reason):
            _ = await configuration.replaceRemote(with: previous)
            bad.add(RemoteConfigStore.BadRevision(
                revision: revision, serials: set.serials, reason: reason, atMilliseconds: WallClock.nowNanoseconds() / 1_000_000))
            let badNow = bad
            do {
                try await BlockingFileWork.run { [store] in
                    try store.saveBadRevisions(badNow)
                    try store.saveSeen(seenNow)
                    try store.removeTrial()
                }
            } catch {
                logger.error("cannot record the rolled-back remote configuration: \(error)")
            }
            let restored = state.withLock { $0.effective?.revision }
            Self.count("rolled_back")
            logger.error("remote configuration failed its probation and was rolled back", metadata: [
                "revision": "\(revision.prefixed)", "reason": "\(reason)",
            ])
            update {
                $0.state = .rolledBack
                $0.effective = restored?.prefixed
                $0.error = reason
            }
        }
        return .done
    }

    /// What probation reads: the watched sources' health, the local sources' drops, the stream and the ring.
    func reading(watched: [String], localNames: Set<String>) -> Probation.Reading {
        var sources: [String: Probation.SourceReading] = [:]
        for source in agent.sourceSupervisor.sourceStates where watched.contains(source.name) {
            sources[source.name] = Probation.SourceReading(ended: source.ended, health: source.health)
        }
        let ring = agent.ring.statistics()
        let localDrops = ring.sources.filter { localNames.contains($0.name) }
            .reduce(0) { $0 + $1.droppedOldest + $1.droppedNewest + $1.rejectedOversize }
        return Probation.Reading(
            sources: sources, localDrops: localDrops, streaming: agent.uplink.statistics().state == .streaming,
            acknowledged: ring.acknowledged, lastAppended: ring.nextToWrite > 0 ? ring.nextToWrite - 1 : 0)
    }
}
