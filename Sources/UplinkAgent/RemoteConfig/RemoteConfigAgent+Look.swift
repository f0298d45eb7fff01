import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig
import UplinkTransport
import UplinkWire

// One look at what the collector assigns: download (envelopes first), check, refuse or apply.

extension RemoteConfigAgent {
    /// Checks `manifest` and, when it names a new set that passes every check, applies it on probation. `.failed`
    /// when the set could not be downloaded (tried again soon, the `.part` files resume); a refusal is `.done`.
    func consider(_ manifest: ConfigManifest, local: UplinkFile) async -> Look {
        let revision = manifest.revision
        update {
            $0.desired = revision.prefixed
            $0.generation = manifest.generation
        }
        let current = state.withLock { state in (effective: state.effective?.revision, refused: state.refused[revision]) }
        if current.effective == revision {
            update {
                $0.state = .applied
                $0.error = nil
            }
            return .done
        }
        if let reason = current.refused {
            update {
                $0.state = .failed
                $0.error = reason
            }
            return .done
        }
        let seen: RemoteConfigStore.Seen
        switch store.seen() {
        case .absent: seen = RemoteConfigStore.Seen()
        case .valid(let value): seen = value
        case .invalid(let reason):
            // Without it an older document could be replayed: apply nothing new until it is fixed.
            // Not remembered, and tried again soon: it may be put right on the box at any moment.
            _ = refuse(
                revision, "\(store.directory)/seen.json cannot be read (\(reason)); remove it to accept documents again",
                remember: false)
            return .failed
        }
        guard manifest.generation >= seen.highestGeneration else {
            // Another collector with older assignments: not this revision's fault, so not remembered.
            update {
                $0.error = "the collector's assignments are generation \(manifest.generation), below \(seen.highestGeneration) seen before "
                    + "(another collector with older assignments?); raise `generation` in its assignments.yaml above \(seen.highestGeneration)"
            }
            return .done
        }
        var bad = store.badRevisions().value ?? RemoteConfigStore.BadRevisions()
        if let known = bad.matching(revision: revision) {
            update {
                $0.state = .rolledBack
                $0.error = known.reason
            }
            return .done
        }
        let set: RemoteConfigStore.DocumentSet
        do {
            try await BlockingFileWork.run { [store] in try store.prepare(removingLeftovers: false) }
            guard let downloaded = try await downloadUnlessReloaded(manifest, local: local, seen: seen) else {
                // A slow collector must not hold a reload (or a pin) for as long as its downloads take.
                logger.info("remote configuration download interrupted by a reload; looking again under the new file", metadata: [
                    "revision": "\(revision.prefixed)",
                ])
                return .failed
            }
            set = downloaded
        } catch is CancellationError {
            return .failed
        } catch let failure as RemoteConfigStore.DownloadFailure {
            switch failure {
            case .documentTooLarge, .envelopeTooLarge, .invalidSet:
                return refuse(revision, failure.description)
            case .refused(let refusal):
                return refuse(revision, refusal.reason, remember: refusal.isLasting)
            case .blob:
                // Retried at the next look; the `.part` files resume.
                logger.warning("cannot download the remote configuration yet; trying again later", metadata: [
                    "revision": "\(revision.prefixed)", "reason": "\(failure)",
                ])
                update { $0.error = "download: \(failure)" }
                return .failed
            }
        } catch {
            update { $0.error = "\(error)" }
            return .failed
        }
        if let known = bad.matching(set) {
            update {
                $0.state = .rolledBack
                $0.error = known.reason
            }
            return .done
        }
        let remoteSources: [AgentConfiguration.NamedSource]
        switch Self.sources(of: set, local: local, seen: seen, isNewApply: true) {
        case .success(let sources): remoteSources = sources
        case .failure(let refusal): return refuse(revision, refusal.reason, remember: refusal.isLasting)
        }
        return await apply(set, sources: remoteSources, local: local, seen: seen, bad: &bad)
    }

    /// Downloads the set `manifest` names (envelopes first, each checked: `envelopeRefusal`), or nil when a reload
    /// came first: the download is cancelled (its `.part` files stay for the next look).
    func downloadUnlessReloaded(
        _ manifest: ConfigManifest, local: UplinkFile, seen: RemoteConfigStore.Seen
    ) async throws -> RemoteConfigStore.DocumentSet? {
        // A reload since the look began: what was checked so far is of the old file.
        _ = reloaded.consume()
        if state.withLock({ $0.localFileChanged }) { return nil }
        let client = await client(for: await configuration.running)
        let outcome = await withTaskGroup(of: Result<RemoteConfigStore.DocumentSet, any Error>?.self) { group in
            group.addTask { [store, downloadMetrics] in
                let now = WallClock.nowNanoseconds() / 1_000_000_000
                do {
                    return .success(try await store.download(
                        manifest, with: client, maximumDocumentBytes: local.remoteConfig.maxDocumentBytes,
                        metrics: downloadMetrics,
                        checkEnvelope: { name, document, bytes in
                            var envelope: ConfigEnvelope?
                            if let bytes {
                                do {
                                    envelope = try ConfigEnvelope(json: bytes)
                                } catch {
                                    return .init(reason: "the envelope of '\(name)' is not valid: \(error)")
                                }
                            }
                            return Self.envelopeRefusal(
                                envelope, document: document, named: name, local: local, seen: seen, now: now, isNewApply: true
                            ).map { .init(reason: $0.reason, isLasting: $0.isLasting) }
                        }))
                } catch {
                    return .failure(error)
                }
            }
            group.addTask { [reloaded] in
                await reloaded.wait()
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        // Stopping (the look's task cancelled) is not a reload: the download failed.
        if outcome == nil, Task.isCancelled { throw CancellationError() }
        return try outcome?.get()
    }

    /// Most refusals remembered at once (a collector that assigns a new refused revision at every look would grow
    /// the table without bound): when full it starts over, which costs one more check of each.
    static var maximumRemembered: Int { 64 }

    /// Counts one outcome of a revision the box looked at (`uplink_remote_config_applies_total`).
    static func count(_ result: String) {
        Counter(label: "uplink_remote_config_applies_total", dimensions: [("result", result)]).increment()
    }

    /// Refuses `revision` for `reason`: a look that ends here is done. A lasting refusal is remembered (the revision is
    /// not looked at again until the local file changes), unless a reload came during this look: the refusal was
    /// made under the old file.
    func refuse(_ revision: SHA256Digest, _ reason: String, remember: Bool = true) -> Look {
        Self.count("refused")
        logger.error("remote configuration refused; the running configuration stays", metadata: [
            "revision": "\(revision.prefixed)", "reason": "\(reason)",
        ])
        state.withLock { state in
            guard remember, !state.localFileChanged else { return }
            if state.refused.count >= Self.maximumRemembered { state.refused.removeAll() }
            state.refused[revision] = reason
        }
        update {
            $0.state = .failed
            $0.error = reason
        }
        return .done
    }
}
