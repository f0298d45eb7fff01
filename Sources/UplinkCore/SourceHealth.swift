import Synchronization

/// How a running source is doing, as the source itself reports it: the status endpoint shows it, and a remote
/// configuration's probation passes only when every source it added is healthy or legitimately idle.
///
/// The last report wins: a sensor whose file can be read again after failures is healthy again. What each kind
/// reports: a sensor or exec source is healthy once a sample produced a record and failing when a sample fails or
/// it disables itself; a tail source is healthy once every file it matched is open, failing when one cannot be
/// opened, idle while no file matches; a journald source is healthy once its journal is open. A source whose task
/// ends with an error is failing with that error.
public final class SourceHealth: Sendable {
    /// The reported state.
    public enum State: String, Sendable, Codable, CaseIterable {
        /// Nothing reported yet.
        case starting
        /// It works: a sample or a read succeeded last.
        case healthy
        /// It works but has nothing to do yet (a tail pattern that matches no file).
        case idle
        /// The last attempt failed, or the source ended with an error; `reason` says why.
        case failing
    }

    /// The state, why (for `idle` and `failing`), and how many failures were reported since start.
    public struct Snapshot: Sendable, Equatable {
        public var state: State
        public var reason: String?
        public var failures: Int

        public init(state: State, reason: String? = nil, failures: Int = 0) {
            self.state = state
            self.reason = reason
            self.failures = failures
        }
    }

    private let current = Mutex(Snapshot(state: .starting))
    /// Whether the state is `healthy`, read without the lock: `succeeded()` runs once per record of a sensor.
    private let isHealthy = Atomic(false)

    public init() {}

    /// A sample or a read worked.
    public func succeeded() {
        guard !isHealthy.load(ordering: .relaxed) else { return }
        // The flag changes under the lock only, so it never disagrees with the state once the lock is released.
        current.withLock { snapshot in
            snapshot.state = .healthy
            snapshot.reason = nil
            isHealthy.store(true, ordering: .relaxed)
        }
    }

    /// An attempt failed, or the source gave up; `reason` is one line for the status.
    public func failed(_ reason: String) {
        current.withLock { snapshot in
            isHealthy.store(false, ordering: .relaxed)
            snapshot.state = .failing
            snapshot.reason = reason
            snapshot.failures += 1
        }
    }

    /// The source has nothing to do yet, for a reason that is not a fault.
    public func idle(_ reason: String) {
        current.withLock { snapshot in
            isHealthy.store(false, ordering: .relaxed)
            snapshot.state = .idle
            snapshot.reason = reason
        }
    }

    /// The state now.
    public var snapshot: Snapshot {
        current.withLock { $0 }
    }
}
