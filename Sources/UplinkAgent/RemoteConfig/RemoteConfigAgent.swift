import Logging
import Metrics
import ServiceLifecycle
import Synchronization
import UplinkCore
import UplinkFiles
import UplinkRemoteConfig
import UplinkTransport
import UplinkWire

/// The box's side of remote configuration (docs/remote-config.md): asks the collector what it assigns (at a hint on
/// the stream, else every `poll_interval` ± 10 %), downloads the documents it does not have, checks them (digests,
/// signatures, audience, serials, expiry, the document rules and the local `allow`), applies them through
/// `RunningConfiguration`, and keeps them only when they pass their `Probation`; otherwise the last-known-good set
/// runs again and the revision is remembered as bad.
///
/// Nothing the collector does or fails to do removes sources that run: no answer, an error, `204` or `404` change
/// nothing. Remote sources end only by a document set that leaves them out (down to `sources: []`), checked and
/// proven like any other. Every check is made again on the last-known-good at each start (`startup`), before the agent runs.
public final class RemoteConfigAgent<C: Clock<Duration>>: Service, Sendable where C.Instant == ContinuousClock.Instant {
    /// What the agent starts with, from `startup`.
    public struct Startup: Sendable {
        /// The remote sources of the last-known-good set (none without one).
        public var sources: [AgentConfiguration.NamedSource]
        /// The set they come from.
        public var set: RemoteConfigStore.DocumentSet?
        public var status: RemoteConfigStatus
    }

    private struct State {
        var status: RemoteConfigStatus
        /// The set that runs (nil: no remote source runs).
        var effective: RemoteConfigStore.DocumentSet?
        /// The manifest's ETag of the last `200`, for `If-None-Match`.
        var etag: String?
        /// Revisions refused by a check before they were applied, with why, for this local file: not downloaded or
        /// checked again until the local file changes (a reload) or the collector assigns another revision.
        var refused: [SHA256Digest: String] = [:]
        /// The last status the collector took.
        var reported: ConfigStatus?
        /// The local file was reloaded since the last look: the running set is checked against it again.
        var localFileChanged = false
    }

    private let store: RemoteConfigStore
    /// Makes the client for a file's `uplink` section, agent id and labels (a reload may change them).
    private let makeClient: @Sendable (UplinkFile) -> RemoteConfigClient
    /// The client in use, and what it was made from; nil until the first request (a box with remote configuration
    /// off never makes one).
    private let clients = Mutex<(key: ClientKey, client: RemoteConfigClient)?>(nil)
    private let configuration: RunningConfiguration
    private let agent: Agent
    private let clock: C
    private let logger: Logger
    private let wake = WakeSignal()
    /// Signalled by a reload: ends a download in progress (`downloadUnlessReloaded`).
    private let reloaded = WakeSignal()
    /// Where the poll interval's jitter comes from.
    private let random: Mutex<any RandomNumberGenerator & Sendable>
    private let state: Mutex<State>
    /// When this was made (with the agent), for the local sources' usual drop rate.
    private let created: ContinuousClock.Instant
    /// Blob downloads and their bytes, counted (made with the agent, so the series are there before the first one).
    private let downloadMetrics = RemoteConfigDownloadMetrics()

    /// What a client is made from: when a reload changes it, the next look uses a new client.
    struct ClientKey: Equatable {
        var uplink: UplinkFile.UplinkSection
        var agentID: String
        var labels: [String: String]

        init(_ file: UplinkFile) {
            uplink = file.uplink
            agentID = file.agent.id
            labels = file.remoteConfig.labels
        }
    }

    /// - Parameters:
    ///   - startup: What `startup` found (the agent was started with its sources).
    ///   - local: The local file the agent was started with.
    ///   - client: Makes the requests' client for a file (the uplink's URL, TLS, token and proxy, the agent id and
    ///     `remote_config.labels`): called at the first request, and again at one after a reload changed those.
    ///   - clock: What the poll interval and the probation are measured on.
    ///   - random: Where the poll interval's ± 10 % jitter comes from (tests pass a generator of their own).
    public init(
        startup: Startup, local: UplinkFile, store: RemoteConfigStore,
        client: @escaping @Sendable (UplinkFile) -> RemoteConfigClient,
        configuration: RunningConfiguration, agent: Agent, clock: C, logger: Logger,
        random: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.store = store
        self.makeClient = client
        self.configuration = configuration
        self.agent = agent
        self.clock = clock
        self.random = Mutex(random)
        var logger = logger
        logger[metadataKey: "component"] = "remote_config"
        self.logger = logger
        self.state = Mutex(State(status: startup.status, effective: startup.set))
        self.created = clock.now
        // What the start found goes out on the first stream.
        if let report = startup.status.report { agent.remoteConfigRelay.publish(report) }
    }

    /// The status now.
    public var status: RemoteConfigStatus { state.withLock { $0.status } }

    /// The revisions not looked at again until the local file changes, with why.
    var rememberedRefusals: [SHA256Digest: String] { state.withLock { $0.refused } }

    /// The collector named the revision it assigns (the stream's `Uplink-Config` header or `config` line): look now,
    /// unless that revision is the one last looked at, runs already (or was refused), and the collector has the
    /// current status (a stream that starts after the collector was away is when a status it missed gets delivered).
    /// A halted rollout assigns a canary that rolled back the set it runs again: it still looks, so its status says
    /// what is assigned now.
    public func hint(revision: SHA256Digest) {
        let settled = state.withLock { state in
            state.status.desired == revision.prefixed
                && (state.effective?.revision == revision || state.refused[revision] != nil)
                && state.status.report == state.reported
        }
        if !settled { wake.signal() }
    }

    /// The local file was reloaded: what was refused may pass now (a key or an allowed path was added), and what
    /// runs must still pass the new `allow` (checked at the next look, which this starts).
    public func localFileChanged() {
        state.withLock {
            $0.refused = [:]
            $0.etag = nil  // what the collector assigns is looked at again under the new file
            $0.localFileChanged = true
        }
        reloaded.signal()
        wake.signal()
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var failedInARow = 0
            while !Task.isCancelled {
                failedInARow = await self.check() == .failed ? failedInARow + 1 : 0
                let settings = await self.configuration.local.remoteConfig
                await self.waitForNextCheck(settings, failedInARow: failedInARow)
            }
        }
        await shutdown()
    }

    /// Shuts the client down (`run` does when it returns; whoever calls `check` without `run` must).
    public func shutdown() async {
        try? await clients.withLock { $0?.client }?.shutdown()
    }

    /// The client for `file`: the one in use, or a new one when a reload changed what it is made from (the old one
    /// is shut down: looks run one at a time, so nothing else uses it).
    private func client(for file: UplinkFile) async -> RemoteConfigClient {
        let key = ClientKey(file)
        let (client, replaced) = clients.withLock { current -> (RemoteConfigClient, RemoteConfigClient?) in
            if let current, current.key == key { return (current.client, nil) }
            let old = current?.client
            let made = makeClient(file)
            current = (key, made)
            return (made, old)
        }
        if let replaced {
            logger.info("remote configuration: the collector's address, credentials or this agent's labels changed; using them from now on")
            try? await replaced.shutdown()
        }
        return client
    }

    /// How one look at the collector went.
    public enum Look: Sendable, Equatable {
        /// The collector answered and what it answered was dealt with (applied, refused, nothing assigned, …):
        /// the next look is in `poll_interval`.
        case done
        /// It did not get that far (no answer, a 5xx, a download cut, a status the collector did not take): the next
        /// look comes sooner, on `retryBackoff`.
        case failed
    }

    /// How long to wait for the next look without a hint: `interval` times a factor drawn from `random`, uniformly
    /// in 0.9 to 1.1 (both included), so that a fleet started together does not ask in step.
    public static func pollDelay(_ interval: Duration, using random: inout some RandomNumberGenerator) -> Duration {
        interval * Double.random(in: 0.9...1.1, using: &random)
    }

    /// When a look failed: the `n`-th failure in a row (from 0) waits a delay drawn from [0, 1 s × 2ⁿ], at most
    /// `pollInterval` (full jitter, so boxes that lost the collector together do not come back in step). A cut
    /// download resumes within seconds instead of a poll interval later; a collector away for long is asked at
    /// `pollInterval` again.
    public static func retryBackoff(pollInterval: Duration) -> Backoff {
        Backoff(initial: .seconds(1), multiplier: 2, maximum: max(pollInterval, .seconds(1)))
    }

    /// Waits for a hint or, whichever comes first, the poll interval (± 10 %) or, after `failedInARow` failed
    /// looks, the retry delay. With remote configuration off in the local file, only for a hint or a reload.
    private func waitForNextCheck(_ settings: UplinkFile.RemoteConfigSection, failedInARow: Int) async {
        guard settings.enabled else { return await wake.wait() }
        let interval = settings.pollInterval
        let delay = random.withLock { random in
            failedInARow == 0
                ? Self.pollDelay(interval, using: &random)
                : Self.retryBackoff(pollInterval: interval).delay(attempt: failedInARow - 1, using: &random)
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [wake] in await wake.wait() }
            group.addTask { [clock] in try? await clock.sleep(for: delay) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Asks the collector for the manifest, acts on the answer and tells the collector the status.
    @discardableResult
    public func check() async -> Look {
        // Taken before the file is read: a reload from here on sets it again, and is seen by this look's checks
        // (`refuse`, the ETag, the download, the probation) or by the next look.
        let localChanged = state.withLock { state -> Bool in
            defer { state.localFileChanged = false }
            return state.localFileChanged
        }
        let local = await configuration.local
        guard local.remoteConfig.enabled else { return await disable() }
        if state.withLock({ $0.status.state == .disabled }) { await enable(local) }
        if store.isPinned {
            // Break glass: the remote sources stop (the last-known-good stays on disk for `unpin`).
            if await !configuration.remote.isEmpty {
                logger.warning("remote configuration pinned: remote sources stopped, remote documents ignored")
                _ = await configuration.replaceRemote(with: [])
            }
            state.withLock {
                $0.effective = nil
                $0.etag = nil  // after `unpin`, the assigned set is fetched and applied anew
            }
            update {
                $0.state = .pinned
                $0.effective = nil
            }
            return await reportStatus() ? .done : .failed
        }
        let recheck = localChanged ? state.withLock { $0.effective } : nil
        switch recheck.map({ Self.sources(of: $0, local: local, seen: nil, isNewApply: false) }) {
        case nil:
            break
        case .success(let sources):
            // Still allowed; what the new `allow` gives the sources (a tail's allowed real paths) takes effect.
            _ = await configuration.replaceRemote(with: sources)
        case .failure(let refusal):
            let problem = refusal.reason
            // The local file changed under the running set (a key or an allowed path removed): it may not run.
            logger.warning("remote sources removed: the running set no longer passes the local file's checks: \(problem)")
            _ = await configuration.replaceRemote(with: [])
            update {
                $0.state = .failed
                $0.effective = nil
                $0.error = problem
            }
            state.withLock { $0.effective = nil }
        }
        let etag = state.withLock { $0.etag }
        var look = Look.done
        let client = await client(for: await configuration.running)
        switch await client.fetchManifest(previousETag: etag) {
        case .notModified:
            break
        case .nothingAssigned, .unsupported:
            // Never a reason to remove what runs.
            update { status in if status.state == .disabled { status.state = .idle } }
        case .failed(let reason):
            logger.debug("cannot fetch the remote configuration manifest; trying again later", metadata: ["reason": "\(reason)"])
            look = .failed
        case .manifest(let manifest, let newETag):
            look = await consider(manifest, local: local)
            // Only a manifest that was dealt with may be answered `304` next time: after a failed download the next
            // look must get the manifest again, or the download would wait for the next assignment.
            // Nor under the old file when a reload came during the look: `localFileChanged` dropped it on purpose.
            state.withLock { $0.etag = look == .done && !$0.localFileChanged ? newETag : nil }
        }
        let reported = await reportStatus()
        return reported ? look : .failed
    }

    /// `remote_config.enabled: false` in the local file (a reload turned it off, or it was off at the start): the
    /// remote sources stop, and nothing is asked until a reload turns it on again. What is on disk stays.
    private func disable() async -> Look {
        if await !configuration.remote.isEmpty {
            logger.warning("remote_config.enabled is false: remote sources stopped")
            _ = await configuration.replaceRemote(with: [])
        }
        state.withLock {
            $0.effective = nil
            $0.etag = nil
        }
        update {
            $0.state = .disabled
            $0.effective = nil
            $0.error = nil
        }
        return .done
    }

    /// A reload turned `remote_config.enabled` on: the box starts what it would start with (`startup`: the
    /// last-known-good, checked against the file as it is now) before it asks the collector, as at a start.
    private func enable(_ local: UplinkFile) async {
        let startup = Self.startup(local: local, store: store, logger: logger, atStart: false)
        if !startup.sources.isEmpty { _ = await configuration.replaceRemote(with: startup.sources) }
        state.withLock { $0.effective = startup.set }
        update { $0 = startup.status }
        logger.info("remote_config.enabled is true: remote configuration on", metadata: [
            "last_known_good": "\(startup.set?.revision.prefixed ?? "none")",
        ])
    }

    /// Tells the collector the status when it changed since it last took one (again at the next look when it fails).
    /// While the stream is up the status travels on it (`RemoteConfigRelay`: a `config_status` line at every change
    /// and at every stream start); `POST /v1/config/status` is for when it is not. Whether the collector has it (or
    /// there was nothing new to tell).
    private func reportStatus() async -> Bool {
        let (report, reported) = state.withLock { ($0.status.report, $0.reported) }
        guard let report, report != reported else { return true }
        if agent.uplink.statistics().state == .streaming {
            state.withLock { $0.reported = report }
            return true
        }
        guard await client(for: await configuration.running).reportStatus(report) else { return false }
        state.withLock { $0.reported = report }
        return true
    }

    private func update(_ change: (inout RemoteConfigStatus) -> Void) {
        let published = state.withLock { state -> ConfigStatus? in
            let before = state.status
            change(&state.status)
            if state.status.state != before.state { state.status.sinceMilliseconds = WallClock.nowNanoseconds() / 1_000_000 }
            return state.status.report != before.report ? state.status.report : nil
        }
        if let published { agent.remoteConfigRelay.publish(published) }
    }
}

// MARK: - Checking and applying

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
    private func downloadUnlessReloaded(
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
    private static func count(_ result: String) {
        Counter(label: "uplink_remote_config_applies_total", dimensions: [("result", result)]).increment()
    }

    /// Refuses `revision` for `reason`: a look that ends here is done. A lasting refusal is remembered (the revision is
    /// not looked at again until the local file changes), unless a reload came during this look: the refusal was
    /// made under the old file.
    private func refuse(_ revision: SHA256Digest, _ reason: String, remember: Bool = true) -> Look {
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

    /// Why a set may not run on this box (the first failed check, as one line for the status).
    struct Refusal: Error {
        let reason: String
        /// Whether the same set would be refused again as long as the local file is the same (a bad signature, a
        /// path outside `allow`, …): then it is not looked at again. An expired envelope is not: the box's clock may
        /// have been wrong.
        var isLasting = true
    }

    /// Why the document `name` (its digest and size) may not run on this box, from its envelope alone, or nil: with
    /// `require_signature` the signature by a trusted key, the audience, the serial against `seen` and, for a new
    /// apply, the expiry (no envelope: refused); without, only that an envelope it comes with names it. Checked on
    /// the manifest's entry before the document is downloaded, and on the document's bytes before it is applied.
    static func envelopeRefusal(
        _ envelope: ConfigEnvelope?, document: ConfigManifest.Blob, named name: String, local: UplinkFile,
        seen: RemoteConfigStore.Seen?, now: Int64, isNewApply: Bool
    ) -> Refusal? {
        let settings = local.remoteConfig
        guard let envelope else {
            // Served unsigned (a collector with `require_signature: false`): the manifest's digest and size,
            // checked when it was downloaded, are all that vouches for it.
            guard settings.requireSignature else { return nil }
            return Refusal(
                reason: "document '\(name)': the collector serves it without an envelope (unsigned), and "
                    + "remote_config.require_signature is true: sign it with `uplink config sign` on the "
                    + "collector, or set remote_config.require_signature: false on this box to accept unsigned documents")
        }
        let verdict =
            settings.requireSignature
            ? EnvelopeVerifier(trustedKeys: settings.signingKeys).verify(
                envelope, document: document, named: name, agentID: local.agent.id, labels: settings.labels,
                seen: seen?.serials[name], now: now, isNewApply: isNewApply)
            // Signatures off: an envelope that comes with the document must still be this document's.
            : EnvelopeVerifier.verifyContent(of: envelope, document: document, named: name)
        guard case .failure(let problem) = verdict else { return nil }
        var refusal = Refusal(reason: "document '\(name)': \(problem)")
        if case .expired = problem { refusal.isLasting = false }
        return refusal
    }

    /// The remote sources `set` adds to `local`, or why it may not run on this box: each envelope (signature,
    /// audience, serial against `seen`, expiry for a new apply; without `require_signature` only that it names its
    /// document; a document without one only without `require_signature`), then the document rules and the local
    /// `allow` (`RemoteConfiguration.merge`).
    static func sources(
        of set: RemoteConfigStore.DocumentSet, local: UplinkFile, seen: RemoteConfigStore.Seen?, isNewApply: Bool
    ) -> Result<[AgentConfiguration.NamedSource], Refusal> {
        func refused(_ reason: String) -> Result<[AgentConfiguration.NamedSource], Refusal> { .failure(Refusal(reason: reason)) }
        let settings = local.remoteConfig
        guard settings.enabled else { return refused("remote_config is not enabled in the local file") }
        let now = WallClock.nowNanoseconds() / 1_000_000_000
        for document in set.documents {
            let blob = ConfigManifest.Blob(sha256: SHA256Digest(of: document.content), size: document.content.count)
            if let refusal = envelopeRefusal(
                document.envelope, document: blob, named: document.name, local: local, seen: seen, now: now,
                isNewApply: isNewApply)
            {
                return .failure(refusal)
            }
        }
        let merged = RemoteConfiguration.merge(
            local: local,
            documents: zip(set.manifest.documents, set.documents).map { ($1.name, $1.content, $0.sha256.hex) })
        guard merged.issues.isEmpty, let file = merged.value else {
            let shown = merged.issues.prefix(3).map(\.description).joined(separator: "; ")
            return refused(merged.issues.count > 3 ? "\(shown) (and \(merged.issues.count - 3) more)" : shown)
        }
        return .success(Array(file.sources.dropFirst(local.sources.count)))
    }

    /// Applies `set`, runs its probation, and keeps it or rolls back. `.failed` when it could not begin (the trial
    /// marker could not be written: tried again soon).
    private func apply(
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
        do {
            let trial = RemoteConfigStore.Trial(
                revision: revision, generation: set.manifest.generation, startedAtMilliseconds: nowMilliseconds,
                serials: set.serials)
            try await BlockingFileWork.run { [store] in try store.saveTrial(trial) }
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
            let trial = RemoteConfigStore.Trial(
                revision: revision, generation: set.manifest.generation, startedAtMilliseconds: nowMilliseconds,
                cleanShutdown: true, serials: set.serials)
            // Here, not on the thread pool: the task is being cancelled, and the agent is stopping anyway.
            do {
                try store.saveTrial(trial)
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
                let inconclusive = RemoteConfigStore.Trial(
                    revision: revision, generation: set.manifest.generation, startedAtMilliseconds: nowMilliseconds,
                    cleanShutdown: true, serials: set.serials)
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
    private func reading(watched: [String], localNames: Set<String>) -> Probation.Reading {
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

// MARK: - Start-up

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
                let signed = local.remoteConfig.requireSignature
                switch store.seen() {
                case .absent: try? store.saveSeen(RemoteConfigStore.Seen().recording(set, generation: trial.generation, signed: signed))
                case .valid(let seen): try? store.saveSeen(seen.recording(set, generation: trial.generation, signed: signed))
                case .invalid: break  // left as it is: `consider` refuses new documents until it is fixed
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
