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
}
