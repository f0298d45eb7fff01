import Logging
import ServiceLifecycle
import UnixSignals
import UplinkConfig
import UplinkCore

/// Reloads the agent's configuration file on SIGHUP (`systemctl reload uplink`), without restarting the process.
///
/// Each signal reads the file again and validates it exactly as `uplink validate` does. A file with issues is
/// reported (every issue as `FILE:LINE:COL: key: message`, as `validate` prints them) and changes nothing: the
/// running configuration stays. A valid file is applied as `ReloadPlan` describes: sources that did not change keep
/// running untouched, changed uplink settings take over with a new stream after the current one drained, and the
/// ring keeps every frame not yet acknowledged. Settings that apply only at the next start are named in the log.
///
/// Under systemd it reports `RELOADING=1` (with `MONOTONIC_USEC`) when a reload begins and `READY=1` with a
/// `STATUS=` line when it is done, applied or not.
///
/// Signals that arrive during a reload are coalesced into one more reload. Put this service after the agent's
/// services in the group (it stops before them).
public struct ConfigurationReloader: Service {
    private let agent: Agent
    private let path: String?
    /// What runs, when the agent was started from a file; nil without one.
    private let configuration: RunningConfiguration?
    private let afterReload: @Sendable () -> Void
    private let afterAttempt: @Sendable () -> Void
    private let collectorSection: @Sendable (ConfigMapping) -> Void
    private let signals: UnixSignalsSequence
    private let notifier: SystemdNotifier
    private let logger: Logger

    /// - Parameters:
    ///   - agent: The running agent.
    ///   - path: The configuration file the agent was started from; nil when it was started without one (then
    ///     SIGHUP is logged and ignored).
    ///   - configuration: The owner of what runs (the file and any remote sources), when started from a file.
    ///   - afterReload: Runs after a valid file was applied (the remote configuration checks its sources again).
    ///   - afterAttempt: Runs at the end of every reload, applied or not (`uplink` gives back the code pages that
    ///     parsing and checking the file touched: `StartupCodePages`, in UplinkProcess).
    ///   - collectorSection: Checks the file's `collector` section (`uplink` passes UplinkCollector's decoder), so
    ///     that a reload refuses exactly what `uplink validate` refuses.
    ///   - signals: SIGHUP, trapped before the agent reports that it runs, so that an early signal is not fatal.
    public init(
        agent: Agent, path: String?, configuration: RunningConfiguration?,
        afterReload: @escaping @Sendable () -> Void = {}, afterAttempt: @escaping @Sendable () -> Void = {},
        collectorSection: @escaping @Sendable (ConfigMapping) -> Void, signals: UnixSignalsSequence,
        notifier: SystemdNotifier = SystemdNotifier(), logger: Logger
    ) {
        self.agent = agent
        self.path = path
        self.configuration = configuration
        self.afterReload = afterReload
        self.afterAttempt = afterAttempt
        self.collectorSection = collectorSection
        self.signals = signals
        self.notifier = notifier
        self.logger = logger
    }

    /// The configuration to add to a `ServiceGroup` after the agent's services: its ending does not end the group.
    public var serviceConfiguration: ServiceGroupConfiguration.ServiceConfiguration {
        .init(service: self, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore)
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            for await _ in signals {
                guard let path, let configuration else {
                    logger.warning("SIGHUP ignored: the agent was started without --config, so there is no file to reload")
                    continue
                }
                await reload(path: path, configuration: configuration)
            }
        }
    }

    /// Loads, validates and applies the file at `path` as the new local file of `configuration`.
    public func reload(path: String, configuration: RunningConfiguration) async {
        notifier.notify(.reloading, .monotonicNow(), logger: logger)
        logger.info("reloading the configuration", metadata: ["file": "\(path)"])
        defer { afterAttempt() }
        let result = UplinkFile.load(path: path, collectorSection: collectorSection)
        guard let new = result.value, new.configuresAgent else {
            let problem: String
            if result.value == nil {
                for issue in result.issues { logger.error("\(issue)") }
                let count = result.issues.count
                problem = "\(count) configuration \(count == 1 ? "issue" : "issues")"
            } else {
                problem = "it configures only a collector (no uplink or sources)"
            }
            logger.error(
                "\(ConfigIssue.escapingControlCharacters(path)): \(problem); not reloaded, the running configuration stays")
            notifier.notify(
                .ready, .status("reload failed (\(problem)); \(status(await configuration.running))"), logger: logger)
            return
        }
        let change = await configuration.replaceLocal(with: new)
        afterReload()
        let plan = change.plan
        var metadata: Logger.Metadata = [
            "added": "\(plan.added)", "removed": "\(plan.removed)", "changed": "\(plan.changed)",
            "unchanged": "\(plan.unchanged)", "uplink": "\(plan.uplinkChanged ? "changed" : "unchanged")",
        ]
        if plan.isEmpty { metadata["note"] = "nothing to change" }
        logger.info("configuration reloaded", metadata: metadata)
        if !change.conflicts.isEmpty {
            logger.warning(
                "remote sources left out: the local file has sources of the same names (the local file wins): \(change.conflicts.joined(separator: ", "))")
        }
        if !plan.deferred.isEmpty {
            logger.warning(
                "not applied until the next start (uplink run keeps the running values): \(plan.deferred.joined(separator: ", "))")
        }
        notifier.notify(.ready, .status(status(plan.running)), logger: logger)
    }

    private func status(_ file: UplinkFile) -> String {
        let target: String
        switch file.uplink.target {
        case .embedded: target = "the embedded collector"
        case .url(let url): target = url
        }
        return "streaming \(agent.runningSourceNames.count) sources to \(target)"
    }
}
