/// The one owner of what the agent runs: the local file (replaced by SIGHUP reloads) plus the sources of the remote
/// configuration in force (replaced when a remote document is applied or rolled back). Every change goes through
/// here, one at a time, as a `ReloadPlan` applied by `Agent.apply`: unchanged sources keep running untouched and the
/// ring keeps every frame.
///
/// The local file always wins: a remote source whose name a local source has is left out (`conflicts`), so a local
/// edit never fails because of a remote document.
public actor RunningConfiguration {
    /// What one change did.
    public struct Change: Sendable, Equatable {
        /// The plan that was applied.
        public var plan: ReloadPlan
        /// Remote sources left out because a local source has their name.
        public var conflicts: [String]
    }

    /// The local file in force.
    public private(set) var local: UplinkFile
    /// The remote sources in force (before conflicts are taken out).
    public private(set) var remote: [AgentConfiguration.NamedSource]
    /// What the agent runs: the local file and the remote sources, with deferred settings at their running values.
    public private(set) var running: UplinkFile

    private let agent: Agent
    private let embedded: EmbeddedCollectorTarget?
    /// A change is being applied: the actor is reentrant at its `await`s, so the next change waits its turn here
    /// (first come, first served) instead of planning from a `running` that is about to be replaced.
    private var changing = false
    private var waitingChanges: [CheckedContinuation<Void, Never>] = []

    /// - Parameters:
    ///   - agent: The agent, started with `merged(local:remote:).file`.
    ///   - local: The local file it was started with.
    ///   - remote: The remote sources it was started with (the last-known-good set), or none.
    ///   - embedded: The embedded collector the process started, if any.
    public init(agent: Agent, local: UplinkFile, remote: [AgentConfiguration.NamedSource] = [], embedded: EmbeddedCollectorTarget?) {
        self.agent = agent
        self.local = local
        self.remote = remote
        self.running = Self.merged(local: local, remote: remote).file
        self.embedded = embedded
    }

    /// The local file with the remote sources after its own; remote sources whose name a local source has are left
    /// out and named in `conflicts`.
    public static func merged(
        local: UplinkFile, remote: [AgentConfiguration.NamedSource]
    ) -> (file: UplinkFile, conflicts: [String]) {
        let localNames = Set(local.sources.map(\.name))
        var file = local
        var conflicts: [String] = []
        for source in remote {
            if localNames.contains(source.name) {
                conflicts.append(source.name)
            } else {
                file.sources.append(source)
            }
        }
        return (file, conflicts)
    }

    /// Replaces the local file (a SIGHUP reload of a valid file) and applies the difference.
    public func replaceLocal(with file: UplinkFile) async -> Change {
        await takeTurn()
        defer { endTurn() }
        return await apply(local: file, remote: remote)
    }

    /// Replaces the remote sources (a remote apply, or a rollback to the last-known-good) and applies the difference.
    public func replaceRemote(with sources: [AgentConfiguration.NamedSource]) async -> Change {
        await takeTurn()
        defer { endTurn() }
        return await apply(local: local, remote: sources)
    }

    /// Returns when no other change is being applied (after those that asked first).
    private func takeTurn() async {
        guard changing else {
            changing = true
            return
        }
        await withCheckedContinuation { waitingChanges.append($0) }
    }

    /// Hands the turn to the next change waiting, if any.
    private func endTurn() {
        if waitingChanges.isEmpty {
            changing = false
        } else {
            waitingChanges.removeFirst().resume()
        }
    }

    private func apply(local newLocal: UplinkFile, remote newRemote: [AgentConfiguration.NamedSource]) async -> Change {
        let (target, conflicts) = Self.merged(local: newLocal, remote: newRemote)
        let plan = ReloadPlan(from: running, to: target, hasEmbeddedCollector: embedded != nil)
        await agent.apply(plan, configuration: plan.running.agentConfiguration(embedded: embedded))
        local = newLocal
        remote = newRemote
        running = plan.running
        return Change(plan: plan, conflicts: conflicts)
    }
}
