import Logging
import ServiceLifecycle
import Synchronization
import UplinkTransport

/// Runs the agent's uplink and, when a reload changes the uplink settings, hands over to a new one on the same ring.
///
/// Each uplink runs in a service group of its own, so that a replaced one can end without shutting down the agent:
/// it hands over (`Uplink.handOver`: sends nothing new, waits until the collector acknowledged what its stream
/// carried, at most its `drainTimeout`, and closes the stream), and only then does the next one connect, with the
/// new settings. The ring keeps every frame not acknowledged, and the next stream resumes from the collector's
/// resume point, so nothing is lost; and no frame is left that one collector stored without acknowledging, so a
/// change of collector duplicates nothing (even while sources keep appending, which a shutdown drain would chase).
///
/// The agent's graceful shutdown drains the current uplink; when an uplink returns on its own (its drain is done),
/// `run()` returns.
final class UplinkHost: Service, Sendable {
    private struct State {
        var current: Uplink
        /// The uplink to run once the current one has drained.
        var next: Uplink?
        /// The group running the current uplink, once started.
        var group: ServiceGroup?
        var shuttingDown = false
        /// The counts of the uplinks the current one replaced.
        var retired = UplinkTotals()
    }

    private let state: Mutex<State>
    private let logger: Logger

    init(_ uplink: Uplink, logger: Logger) {
        self.state = Mutex(State(current: uplink))
        self.logger = logger
    }

    /// The uplink running now (or about to run).
    var current: Uplink { state.withLock { $0.current } }

    /// The counts of every uplink this host ran, the current one included: each uplink counts from zero, and
    /// `/metrics` shows the agent's totals across reloads.
    func totals() -> UplinkTotals {
        state.withLock { state in
            var totals = state.retired
            totals.add(state.current.statistics())
            return totals
        }
    }

    /// The newest uplink: the one waiting to take over, else the current one.
    var newest: Uplink { state.withLock { $0.next ?? $0.current } }

    /// Drains the current uplink and then runs `uplink` instead. A second replacement before the first took over
    /// supersedes it.
    func replace(with uplink: Uplink) async {
        let current = state.withLock { state -> Uplink in
            state.next = uplink
            return state.current
        }
        // Its `run()` returns when done, which ends its group (`.gracefullyShutdownGroup`); a hand-over asked for
        // before it started is taken up when it does.
        current.handOver()
    }

    func run() async throws {
        while true {
            let (uplink, group) = state.withLock { state -> (Uplink, ServiceGroup) in
                let group = ServiceGroup(
                    configuration: .init(
                        services: [.init(service: state.current, successTerminationBehavior: .gracefullyShutdownGroup)],
                        gracefulShutdownSignals: [], cancellationSignals: [], logger: logger))
                state.group = group
                return (state.current, group)
            }
            // A shutdown that came while no group was running.
            if state.withLock({ $0.shuttingDown }) { await group.triggerGracefulShutdown() }
            try await withGracefulShutdownHandler {
                try await group.run()
            } onGracefulShutdown: {
                self.state.withLock { $0.shuttingDown = true }
                Task { await group.triggerGracefulShutdown() }
            }
            let next = state.withLock { state -> Uplink? in
                state.group = nil
                guard !state.shuttingDown, !Task.isCancelled, let next = state.next else { return nil }
                state.retired.add(state.current.statistics())
                state.current = next
                state.next = nil
                return next
            }
            guard let next else { return }
            logger.info("uplink settings reloaded: connecting with the new settings", metadata: [
                "url": "\(next.configuration.url)", "previous_url": "\(uplink.configuration.url)",
            ])
        }
    }
}

/// What `UplinkHost.totals()` adds up: the cumulative counts of `UplinkStatistics`.
struct UplinkTotals: Sendable, Equatable {
    var connectionAttempts = 0
    var bytesWritten = 0
    var lineBytesWritten = 0
    var recordsWritten = 0
    var heartbeatsSent = 0
    var failuresByReason: [String: Int] = [:]

    mutating func add(_ statistics: UplinkStatistics) {
        connectionAttempts += statistics.connectionAttempts
        bytesWritten += statistics.bytesWritten
        lineBytesWritten += statistics.lineBytesWritten
        recordsWritten += statistics.recordsWritten
        heartbeatsSent += statistics.heartbeatsSent
        failuresByReason.merge(statistics.failuresByReason, uniquingKeysWith: +)
    }
}
