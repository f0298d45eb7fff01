import UplinkWire

/// Where a box's remote configuration stands: what the collector assigns (desired), what runs (effective), what
/// runs at the next start (the last-known-good) and what happened last. `/v1/status`, `uplink status` and the
/// collector show it.
public struct RemoteConfigStatus: Sendable, Equatable, Codable {
    /// What happened last.
    public enum State: String, Sendable, Codable, CaseIterable {
        /// `remote_config.enabled` is false.
        case disabled
        /// Enabled, nothing assigned or nothing fetched yet.
        case idle
        /// A set was applied and is on probation.
        case applying
        /// The desired set runs and passed its probation.
        case applied
        /// A set was refused before it was applied (a check failed); what ran before still runs.
        case failed
        /// A set was applied, failed its probation, and the last-known-good runs again.
        case rolledBack = "rolled_back"
        /// `uplink config pin`: remote documents are ignored on this box.
        case pinned
    }

    public var state: State
    /// The revision the collector assigns (`sha256:<hex>`), when one was fetched.
    public var desired: String?
    /// The revision that runs, nil when no remote set runs.
    public var effective: String?
    /// The revision the box starts with (the last set that passed its probation).
    public var lastKnownGood: String?
    /// The generation of the assignments that named `desired`.
    public var generation: UInt64?
    /// Why the last set was refused or rolled back (the first failed check or criterion).
    public var error: String?
    /// When `state` last changed, milliseconds since the Unix epoch.
    public var sinceMilliseconds: Int64

    public init(
        state: State, desired: String? = nil, effective: String? = nil, lastKnownGood: String? = nil,
        generation: UInt64? = nil, error: String? = nil, sinceMilliseconds: Int64
    ) {
        self.state = state
        self.desired = desired
        self.effective = effective
        self.lastKnownGood = lastKnownGood
        self.generation = generation
        self.error = error
        self.sinceMilliseconds = sinceMilliseconds
    }

    /// What the collector is told (`POST /v1/config/status`, the stream's `config_status` line): nil while there is
    /// nothing to tell (nothing fetched yet). `disabled` goes on the stream only, to a collector that serves remote
    /// configuration (see `RemoteConfigAgent.reportStatus`).
    public var report: ConfigStatus? {
        let wireState: ConfigStatus.State
        switch state {
        case .idle: return nil
        case .disabled: wireState = .disabled
        case .applying: wireState = .applying
        case .applied: wireState = .applied
        case .failed: wireState = .failed
        case .rolledBack: wireState = .rolledBack
        case .pinned: wireState = .pinned
        }
        return ConfigStatus(
            desired: desired, effective: effective, lastKnownGood: lastKnownGood, state: wireState,
            error: error.map { String($0.utf8.prefix(ConfigStatus.maximumErrorBytes)) ?? "" }, generation: generation)
    }
}
