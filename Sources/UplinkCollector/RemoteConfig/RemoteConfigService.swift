import Logging
import Metrics
import Synchronization
import UplinkFiles
import UplinkRemoteConfig
import UplinkWire

/// The labels an agent brings with a request, before the inventory (which a reload may change) is added.
struct PresentedLabels: Sendable, Equatable {
    /// From the client certificate's `uplink:label:NAME=VALUE` URIs.
    var certificate: [String: String] = [:]
    /// From the `Uplink-Labels` header.
    var reported: [String: String] = [:]
}

/// An agent's last reported remote configuration status, as `/v1/fleet` shows it.
public struct AgentConfigStatus: Sendable, Equatable {
    public var status: ConfigStatus
    /// When it was reported, ns since the Unix epoch.
    public var reportedAt: Int64
}

/// A rollout as `/v1/fleet` shows it.
public struct RolloutStatus: Sendable, Equatable {
    public var name: String
    /// The active stage (0-based; stages 0 to it are active).
    public var stage: Int
    public var halted: Bool
    /// Why it halted: the agents and their errors.
    public var reason: String?
}

/// The collector's remote configuration: the loaded directory, the halted rollouts, what agents reported, and the
/// open streams to tell when their assignment changes. One per collector with `collector.remote_config`.
final class RemoteConfigService: Sendable {
    let settings: RemoteConfigSettings
    private let validator: RemoteDocumentValidator
    private let logger: Logger

    private struct Subscriber {
        var agent: String
        var labels: PresentedLabels
        var sent: ConfigHint?
        var notify: @Sendable (ConfigHint) -> Void
    }

    struct Halt: Sendable, Equatable {
        var reason: String
        /// Agents that ran the rollout's new documents when it halted (their last report named an effective revision
        /// that holds them): they keep them.
        var keep: Set<String>
    }

    private struct State {
        var set: RemoteConfigSet
        var statuses: [String: AgentConfigStatus] = [:]
        /// Rollout name → distinct agents of its active stages that reported a failure.
        var failures: [String: [String: String]] = [:]
        var halts: [String: Halt] = [:]
        var subscribers: [UInt64: Subscriber] = [:]
        var nextSubscriber: UInt64 = 0
        var requests: [RequestKey: UInt64] = [:]
        /// The documents (name → digest) of each revision this process served in a manifest, so that a revision an
        /// agent reports can be told apart by what it holds. Bounded by `maximumKnownRevisions`.
        var servedRevisions: [String: [String: SHA256Digest]] = [:]
        /// Counts every change of `halts`, so that the halts file is never replaced by an older snapshot.
        var haltsVersion: UInt64 = 0

        /// After a change of `halts`: what the halts file is to hold now, and its version.
        mutating func haltsChanged() -> (RemoteConfigHaltsFile.Snapshot, UInt64) {
            haltsVersion += 1
            let entries = halts.keys.sorted().map { name in
                RemoteConfigHaltsFile.Entry(rollout: name, reason: halts[name]!.reason, keep: halts[name]!.keep.sorted())
            }
            return (RemoteConfigHaltsFile.Snapshot(generation: set.generation, halts: entries), haltsVersion)
        }
    }

    struct RequestKey: Hashable, Sendable {
        var endpoint: String
        var code: Int
    }

    private let state: Mutex<State>
    /// Where halts are kept across restarts; nil: in memory only.
    private let haltsFile: RemoteConfigHaltsFile?
    /// Most agents whose reports are kept: beyond it the agent that reported least recently is forgotten, so that
    /// a peer inventing agent ids cannot grow the table without bound.
    static let maximumReportingAgents = 16_384
    /// Most revisions whose documents are remembered (`State.servedRevisions`); when full it starts over (a revision
    /// forgotten only makes the halt of a rollout more cautious: see `record`).
    static let maximumKnownRevisions = 4_096

    /// Loads the directory; throws a `CollectorError` (`remote_config`) naming every problem. With `haltsFile`, the
    /// halts it holds are restored when they are of the generation the directory has, and every later halt is
    /// written there.
    init(
        settings: RemoteConfigSettings, validator: @escaping RemoteDocumentValidator, haltsFile: String? = nil,
        logger: Logger
    ) throws(CollectorError) {
        self.settings = settings
        self.validator = validator
        self.logger = logger
        self.haltsFile = haltsFile.map { RemoteConfigHaltsFile(path: $0) }
        let set: RemoteConfigSet
        switch RemoteConfigSet.load(settings, validator: validator) {
        case .failure(let failure):
            throw CollectorError(code: "remote_config", message: "collector.remote_config.dir \(settings.directory): \(failure)")
        case .success(let loaded):
            set = loaded
        }
        var initial = State(set: set)
        if let file = self.haltsFile { initial.halts = Self.restoreHalts(from: file, set: set, logger: logger) }
        state = Mutex(initial)
        logger.info(
            "Remote configuration loaded",
            metadata: ["dir": "\(settings.directory)", "generation": "\(set.generation)", "documents": "\(set.documents.count)"])
    }

    /// The halts `file` holds for `set`'s generation, of rollouts `set` still has; a file of another generation is
    /// removed (its halts ended with it), one that cannot be read is logged and left for the next halt to replace.
    private static func restoreHalts(
        from file: RemoteConfigHaltsFile, set: RemoteConfigSet, logger: Logger
    ) -> [String: Halt] {
        let saved: RemoteConfigHaltsFile.Snapshot
        switch file.read() {
        case .success(nil):
            return [:]
        case .success(let snapshot?):
            saved = snapshot
        case .failure(let problem):
            logger.error(
                "Remote configuration: the saved halts cannot be read; rollouts start unhalted",
                metadata: ["file": "\(file.path)", "reason": "\(problem)"])
            return [:]
        }
        guard saved.generation == set.generation else {
            file.remove()
            logger.info(
                "Remote configuration: the saved halts are of another generation, and no longer hold",
                metadata: ["file": "\(file.path)", "saved": "\(saved.generation)", "generation": "\(set.generation)"])
            return [:]
        }
        var halts: [String: Halt] = [:]
        for entry in saved.halts where set.rules.contains(where: { $0.name == entry.rollout && $0.rollout != nil }) {
            halts[entry.rollout] = Halt(reason: entry.reason, keep: Set(entry.keep))
            logger.warning(
                "Rollout still halted (restored)", metadata: ["rollout": "\(entry.rollout)", "reason": "\(entry.reason)"])
        }
        return halts
    }

    /// The generation being served.
    var generation: UInt64 { state.withLock { $0.set.generation } }

    /// Reads the directory again (SIGHUP). A directory that fails to load, or whose generation is lower than the
    /// one served, is refused: the previous set stays, and the reason is logged and returned. On success, open
    /// streams whose assignment changed are told; a higher generation lifts every halt (and the halts file says so).
    @discardableResult
    func reload() -> Result<UInt64, RemoteConfigLoadFailure> {
        let loaded = RemoteConfigSet.load(settings, validator: validator)
        var lifted: (RemoteConfigHaltsFile.Snapshot, UInt64)?
        let result: Result<UInt64, RemoteConfigLoadFailure> = state.withLock { state in
            switch loaded {
            case .failure(let failure):
                return .failure(failure)
            case .success(let set):
                guard set.generation >= state.set.generation else {
                    return .failure(RemoteConfigLoadFailure(problems: [
                        "\(settings.directory)/assignments.yaml: generation \(set.generation) is lower than \(state.set.generation), "
                            + "the one served (generations only grow)"
                    ]))
                }
                let newGeneration = set.generation > state.set.generation
                state.set = set
                if newGeneration {
                    // A new generation is the operator's next step: halts and failure counts start over.
                    if !state.halts.isEmpty {
                        state.halts = [:]
                        lifted = state.haltsChanged()
                    }
                    state.failures = [:]
                }
                notifyChanged(&state)
                return .success(set.generation)
            }
        }
        if let (snapshot, version) = lifted { save(snapshot, version: version) }
        switch result {
        case .failure(let failure):
            logger.error(
                "Remote configuration not reloaded; the previous documents are still served",
                metadata: ["dir": "\(settings.directory)", "reason": "\(failure)"])
        case .success(let generation):
            logger.info("Remote configuration reloaded", metadata: ["dir": "\(settings.directory)", "generation": "\(generation)"])
        }
        return result
    }

    /// Writes the halts file (when there is one); a failure is logged: the halts hold in memory all the same.
    private func save(_ snapshot: RemoteConfigHaltsFile.Snapshot, version: UInt64) {
        guard let haltsFile else { return }
        do {
            try haltsFile.write(snapshot, version: version)
        } catch {
            logger.error(
                "Remote configuration: the halts could not be saved; they hold until this collector stops",
                metadata: ["file": "\(haltsFile.path)", "error": "\(error)"])
        }
    }

    // MARK: - Assignment

    /// The labels of an agent: certificate, inventory and reported labels as `labels_from` allows, the first
    /// source naming a label winning.
    private func mergedLabels(agent: String, _ presented: PresentedLabels, set: RemoteConfigSet) -> [String: String] {
        var labels: [String: String] = [:]
        if settings.labelsFrom.contains(.agent) { labels = presented.reported }
        if settings.labelsFrom.contains(.inventory), let inventory = set.inventory[agent] {
            labels.merge(inventory) { _, new in new }
        }
        if settings.labelsFrom.contains(.certificate) { labels.merge(presented.certificate) { _, new in new } }
        return labels
    }

    /// The documents of `agent`, in rule order (a document that several rules assign counts once, where the first
    /// rule puts it), and the rollouts whose active stages it is in.
    private func assignment(agent: String, _ presented: PresentedLabels, state: State) -> (documents: [ServedDocument], rollouts: [String]) {
        let set = state.set
        let labels = mergedLabels(agent: agent, presented, set: set)
        var names: [String] = []
        var rollouts: [String] = []
        func add(_ list: [String]) {
            for name in list where !names.contains(name) { names.append(name) }
        }
        for rule in set.rules where rule.matches(agent: agent, labels: labels) {
            guard let rollout = rule.rollout else {
                add(rule.documents)
                continue
            }
            let inStage = RemoteConfigSet.inActiveStage(rule, rollout, agent: agent, labels: labels)
            if inStage { rollouts.append(rule.name) }
            if let halt = state.halts[rule.name] {
                // Halted: an agent already running the new documents keeps them; every other one gets `previous`.
                add(inStage && halt.keep.contains(agent) ? rule.documents : rollout.previous)
            } else {
                add(inStage ? rule.documents : rollout.previous)
            }
        }
        return (names.compactMap { set.documents[$0] }, rollouts)
    }

    private func manifest(agent: String, _ presented: PresentedLabels, state: State) -> ConfigManifest {
        let documents = assignment(agent: agent, presented, state: state).documents
        return ConfigManifest(generation: state.set.generation, documents: documents.map(\.manifestEntry))
    }

    /// The manifest of `agent` now, its revision remembered with its documents (`State.servedRevisions`).
    private func currentManifest(agent: String, _ presented: PresentedLabels, state: inout State) -> ConfigManifest {
        let current = manifest(agent: agent, presented, state: state)
        let revision = current.revision.prefixed
        if state.servedRevisions[revision] == nil {
            if state.servedRevisions.count >= Self.maximumKnownRevisions { state.servedRevisions = [:] }
            state.servedRevisions[revision] = Dictionary(
                current.documents.map { ($0.name, $0.sha256) }, uniquingKeysWith: { first, _ in first })
        }
        return current
    }

    /// The manifest of `agent`; its documents are empty when nothing is assigned.
    func manifest(agent: String, labels presented: PresentedLabels) -> ConfigManifest {
        state.withLock { currentManifest(agent: agent, presented, state: &$0) }
    }

    /// Whether `revision` (as an agent reports it) holds every document of `rule` as served now: nil when this
    /// process never assigned that revision, so cannot tell.
    private func revision(_ revision: String?, holdsDocumentsOf rule: AssignmentRule, state: State) -> Bool? {
        guard let revision, let documents = state.servedRevisions[revision] else { return nil }
        return rule.documents.allSatisfy { name in
            guard let served = state.set.documents[name] else { return false }
            return documents[name] == served.sha256
        }
    }

    /// The hint of the stream header and line: the revision of the agent's manifest and the generation.
    func hint(agent: String, labels presented: PresentedLabels) -> ConfigHint {
        let current = manifest(agent: agent, labels: presented)
        return ConfigHint(revision: current.revision.prefixed, generation: current.generation)!
    }

    /// The bytes of blob `digest` when it is a document or envelope assigned to `agent`; nil otherwise (unknown, or
    /// another agent's).
    func blob(_ digest: SHA256Digest, agent: String, labels presented: PresentedLabels) -> [UInt8]? {
        state.withLock { state in
            guard let bytes = state.set.blobs[digest] else { return nil }
            let documents = assignment(agent: agent, presented, state: state).documents
            guard documents.contains(where: { $0.sha256 == digest || $0.envelopeSHA256 == digest }) else { return nil }
            return bytes
        }
    }

    // MARK: - Status

    /// Records an agent's report (`POST /v1/config/status`).
    ///
    /// A failure counts towards halting a rollout whose active stages hold the agent only when it is about what the
    /// agent is assigned now (`desired` is the revision it would be served: not an old failure that a reconnect or a
    /// restarted collector hears again) and what runs on the agent (`effective`) did not already hold the rollout's
    /// documents (a revision that fails for another rule's sake is not this rollout's failure). An `effective`
    /// revision this process never assigned cannot be told apart, and counts. At a halt, every agent whose last
    /// report names an effective revision holding the rollout's documents keeps them, unless that report says it
    /// is still on probation with them (`applying`) or pinned.
    func record(_ status: ConfigStatus, agent: String, labels presented: PresentedLabels, wall: Int64) async {
        await record(batch: [status], agent: agent, labels: presented, wall: wall)
    }

    /// Records the `config_status` lines of one batch of a stream, in order: only the last is the agent's report,
    /// and the last failure before it (if any) still counts towards halting rollouts, as `record` says. So a burst
    /// of lines costs at most two looks at the assignment, under one lock.
    func record(batch statuses: [ConfigStatus], agent: String, labels presented: PresentedLabels, wall: Int64) async {
        let reports = ConfigStatus.reportable(statuses)
        guard !reports.isEmpty else { return }
        let (halted, saved) = state.withLock { state in
            var halted: [(String, String)] = []
            for status in reports {
                halted += record(status, agent: agent, presented, wall: wall, state: &state)
            }
            guard !halted.isEmpty else { return (halted, nil as (RemoteConfigHaltsFile.Snapshot, UInt64)?) }
            notifyChanged(&state)
            return (halted, state.haltsChanged())
        }
        for (name, reason) in halted {
            logger.error(
                "Rollout halted: an agent of its active stages reported a failure; agents not yet on its new documents keep 'previous'",
                metadata: ["rollout": "\(name)", "reason": "\(reason)"])
        }
        if let (snapshot, version) = saved {
            // An fsync may take a while: not on the caller's thread (a stream's event loop).
            await BlockingFileWork.run { self.save(snapshot, version: version) }
        }
    }

    /// Records one report under the lock; the rollouts it halted, with why.
    private func record(
        _ status: ConfigStatus, agent: String, _ presented: PresentedLabels, wall: Int64, state: inout State
    ) -> [(String, String)] {
        if state.statuses[agent] == nil, state.statuses.count >= Self.maximumReportingAgents,
            let oldest = state.statuses.min(by: { $0.value.reportedAt < $1.value.reportedAt })?.key
        {
            state.statuses[oldest] = nil
        }
        state.statuses[agent] = AgentConfigStatus(status: status, reportedAt: wall)
        // Computed for every report: the revision is then remembered with its documents, so that a collector that
        // restarted can tell what an agent that reports `applied` at its stream start runs.
        let current = currentManifest(agent: agent, presented, state: &state).revision.prefixed
        guard status.state == .failed || status.state == .rolledBack else { return [] }
        guard status.desired == current else { return [] }
        var halted: [(String, String)] = []
        let rollouts = assignment(agent: agent, presented, state: state).rollouts
        for name in rollouts where state.halts[name] == nil {
            guard let rule = state.set.rules.first(where: { $0.name == name }), let rollout = rule.rollout else { continue }
            // What runs on the agent (the set it fell back to, or ran before the refused one) already held the
            // rollout's documents: the failure is another rule's.
            if revision(status.effective, holdsDocumentsOf: rule, state: state) == true { continue }
            state.failures[name, default: [:]][agent] = status.error ?? status.state.rawValue
            let failing = state.failures[name]!
            guard failing.count >= rollout.haltOnFailures else { continue }
            let reason = failing.keys.sorted().map { "\($0): \(failing[$0]!)" }.joined(separator: "; ")
            // Agents that run the rollout's documents (their last report names an effective revision that holds
            // them) keep them; a revision this process never assigned cannot be told, so is not kept. One still on
            // probation (`applying`: its effective revision is the trial) has not proven them, and a pinned one
            // runs no remote documents: both get `previous`.
            var keep = Set<String>()
            for (other, report) in state.statuses where failing[other] == nil {
                guard report.status.state != .applying, report.status.state != .pinned else { continue }
                if revision(report.status.effective, holdsDocumentsOf: rule, state: state) == true { keep.insert(other) }
            }
            state.halts[name] = Halt(reason: reason, keep: keep)
            halted.append((name, reason))
        }
        return halted
    }

    /// Every agent's last report.
    func statuses() -> [String: AgentConfigStatus] {
        state.withLock { $0.statuses }
    }

    /// Every rollout of the served assignments.
    func rollouts() -> [RolloutStatus] {
        state.withLock { state in
            state.set.rules.compactMap { rule in
                guard let rollout = rule.rollout else { return nil }
                let halt = state.halts[rule.name]
                return RolloutStatus(name: rule.name, stage: rollout.currentStage, halted: halt != nil, reason: halt?.reason)
            }
        }
    }

    // MARK: - Requests

    /// Counts an answer of a remote configuration endpoint (`uplink_collector_config_requests_total`).
    func countRequest(endpoint: String, code: Int) {
        state.withLock { $0.requests[RequestKey(endpoint: endpoint, code: code), default: 0] += 1 }
        Counter(label: "uplink_collector_config_requests_total", dimensions: [("endpoint", endpoint), ("code", String(code))])
            .increment()
    }

    /// How many agents last reported each state (`uplink_collector_config_agents`).
    func agentsByState() -> [ConfigStatus.State: Int] {
        state.withLock { state in
            var counts: [ConfigStatus.State: Int] = [:]
            for state in ConfigStatus.State.allCases { counts[state] = 0 }
            for report in state.statuses.values { counts[report.status.state, default: 0] += 1 }
            return counts
        }
    }

    func requestCounts() -> [RequestKey: UInt64] {
        state.withLock { $0.requests }
    }

    // MARK: - Streams

    /// Registers an open stream: `notify` is called with the new hint whenever the agent's assignment changes
    /// (a reload, a halted rollout), under the service's lock, so that hints arrive in the order the assignment
    /// changed: it must be quick and must not call back into the service. Returns the hint to send now and the id for
    /// `unsubscribe`.
    func subscribe(
        agent: String, labels presented: PresentedLabels, notify: @escaping @Sendable (ConfigHint) -> Void
    ) -> (id: UInt64, hint: ConfigHint) {
        state.withLock { state in
            // Under the lock: a reload cannot slip between computing the hint and registering the stream.
            let current = currentManifest(agent: agent, presented, state: &state)
            let hint = ConfigHint(revision: current.revision.prefixed, generation: current.generation)!
            state.nextSubscriber += 1
            state.subscribers[state.nextSubscriber] = Subscriber(agent: agent, labels: presented, sent: hint, notify: notify)
            return (state.nextSubscriber, hint)
        }
    }

    func unsubscribe(_ id: UInt64) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }

    /// Tells every open stream whose revision changed; called under the lock that changed the state, so that two
    /// changes racing (a reload and a halt) cannot deliver their hints out of order.
    private func notifyChanged(_ state: inout State) {
        for (id, subscriber) in state.subscribers {
            let current = currentManifest(agent: subscriber.agent, subscriber.labels, state: &state)
            let revision = current.revision.prefixed
            // Only a new revision is news: a generation alone changes nothing an agent would fetch.
            guard revision != subscriber.sent?.revision else { continue }
            let hint = ConfigHint(revision: revision, generation: current.generation)!
            state.subscribers[id]?.sent = hint
            subscriber.notify(hint)
        }
    }
}
