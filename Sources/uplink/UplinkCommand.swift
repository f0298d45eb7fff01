import ArgumentParser
import Logging
import UplinkAgent

/// The `uplink` command line: a thin layer over the agent and collector modules.
@main
struct UplinkCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uplink",
        abstract: "Stream sensor readings and log lines from an edge box to a collector, without losing any.",
        discussion: """
            Examples:
              # Run as configured; examples.yaml streams to an embedded collector:
              uplink run --config examples.yaml
              # Check a configuration without starting anything:
              uplink validate --config /etc/uplink/uplink.yaml
              # Quickstart without a file (cpu and memory to an embedded collector):
              uplink run
              # Receive streams from agents:
              uplink collector --port 4318 --data-dir /var/lib/uplink-collector
              # Ask a running agent how it is doing (its agent.metrics_listen endpoint):
              uplink status --watch
            """,
        version: UplinkVersion.current,
        subcommands: [RunCommand.self, ValidateCommand.self, CollectorCommand.self, StatusCommand.self, ConfigCommand.self]
    )
}

/// The version printed by `uplink --version`.
enum UplinkVersion {
    static let current = Agent.version
}

/// Options every subcommand shares.
struct LoggingOptions: ParsableArguments {
    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error or critical. Logs go to stderr.")
    var logLevel: Logger.Level = .info

    func bootstrap() {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
