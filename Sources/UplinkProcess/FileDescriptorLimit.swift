import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The process's limit on open file descriptors (`RLIMIT_NOFILE`).
///
/// Every connection, tailed file and log segment is a descriptor. Many systems start services with a soft limit of
/// 1024 and a much higher hard limit; the soft limit may be raised up to the hard one without privileges, so both
/// `uplink run` and `uplink collector` raise it at start (`LimitNOFILE=` in the systemd units sets both).
public enum FileDescriptorLimit {
    /// What `raiseSoftLimit()` found and did.
    public struct Outcome: Sendable, Equatable {
        /// The soft limit before.
        public var previous: UInt64
        /// The soft limit now.
        public var current: UInt64
        /// The hard limit (`UInt64.max` for unlimited).
        public var hard: UInt64
        /// Why the limit could not be read or raised, or nil.
        public var failure: String?
    }

    /// Raises the soft limit to the hard limit (on Darwin at most `OPEN_MAX`, which the kernel enforces).
    @discardableResult
    public static func raiseSoftLimit() -> Outcome {
        var limit = rlimit()
        guard getrlimit(resourceNumber, &limit) == 0 else {
            return Outcome(previous: 0, current: 0, hard: 0, failure: "getrlimit: errno \(errno)")
        }
        let previous = UInt64(limit.rlim_cur)
        let hard = limit.rlim_max == rlim_t.max ? UInt64.max : UInt64(limit.rlim_max)
        var target = limit.rlim_max
        #if canImport(Darwin)
        target = min(target, rlim_t(OPEN_MAX))
        #endif
        guard target > limit.rlim_cur else {
            return Outcome(previous: previous, current: previous, hard: hard, failure: nil)
        }
        limit.rlim_cur = target
        guard setrlimit(resourceNumber, &limit) == 0 else {
            return Outcome(previous: previous, current: previous, hard: hard, failure: "setrlimit: errno \(errno)")
        }
        return Outcome(previous: previous, current: UInt64(target), hard: hard, failure: nil)
    }

    /// `raiseSoftLimit()`, logged: at info when the limit changed or could not be raised, else at debug.
    @discardableResult
    public static func raiseSoftLimit(logger: Logger) -> Outcome {
        let outcome = raiseSoftLimit()
        let metadata: Logger.Metadata = [
            "soft": "\(outcome.current)", "previous": "\(outcome.previous)",
            "hard": "\(outcome.hard == UInt64.max ? "unlimited" : String(outcome.hard))",
        ]
        if let failure = outcome.failure {
            logger.info("Could not raise the open file limit", metadata: metadata.merging(["error": "\(failure)"]) { $1 })
        } else if outcome.current != outcome.previous {
            logger.info("Raised the open file limit (RLIMIT_NOFILE) to the hard limit", metadata: metadata)
        } else {
            logger.debug("Open file limit (RLIMIT_NOFILE)", metadata: metadata)
        }
        return outcome
    }

    #if os(Linux)
    private static let resourceNumber = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resourceNumber = RLIMIT_NOFILE
    #endif
}
