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

    struct State {
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

    let store: RemoteConfigStore
    /// Makes the client for a file's `uplink` section, agent id and labels (a reload may change them).
    let makeClient: @Sendable (UplinkFile) -> RemoteConfigClient
    /// The client in use, and what it was made from; nil until the first request (a box with remote configuration
    /// off never makes one).
    let clients = Mutex<(key: ClientKey, client: RemoteConfigClient)?>(nil)
    let configuration: RunningConfiguration
    let agent: Agent
    let clock: C
    let logger: Logger
    let wake = WakeSignal()
    /// Signalled by a reload: ends a download in progress (`downloadUnlessReloaded`).
    let reloaded = WakeSignal()
    /// Where the poll interval's jitter comes from.
    let random: Mutex<any RandomNumberGenerator & Sendable>
    let state: Mutex<State>
    /// When this was made (with the agent), for the local sources' usual drop rate.
    let created: ContinuousClock.Instant
    /// Blob downloads and their bytes, counted (made with the agent, so the series are there before the first one).
    let downloadMetrics = RemoteConfigDownloadMetrics()

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
    func client(for file: UplinkFile) async -> RemoteConfigClient {
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
    func waitForNextCheck(_ settings: UplinkFile.RemoteConfigSection, failedInARow: Int) async {
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
    func disable() async -> Look {
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
    func enable(_ local: UplinkFile) async {
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
    func reportStatus() async -> Bool {
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

    func update(_ change: (inout RemoteConfigStatus) -> Void) {
        let published = state.withLock { state -> ConfigStatus? in
            let before = state.status
            change(&state.status)
            if state.status.state != before.state { state.status.sinceMilliseconds = WallClock.nowNanoseconds() / 1_000_000 }
            return state.status.report != before.report ? state.status.report : nil
        }
        if let published { agent.remoteConfigRelay.publish(published) }
    }
}
