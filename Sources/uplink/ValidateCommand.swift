import ArgumentParser
import Logging
import UplinkAgent
import UplinkCollector
import UplinkCore

/// `uplink validate`: the same build path as `run`, without starting anything.
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check a configuration file and report every problem; start nothing.",
        discussion: "Exits 0 when the file is valid and 78 when it is not, printing FILE:LINE:COL: key: message lines."
    )

    @Option(name: .shortAndLong, help: "The YAML configuration file.")
    var config: String

    func run() throws {
        let loaded = try ConfigurationLoading.load(config)
        let file = loaded.file
        var summary: [String] = []
        if file.configuresAgent {
            // Build what `run` builds (ring, sources, uplink) without running any of it.
            let agent = Agent(configuration: file.agentConfiguration(embedded: nil), logger: Logger(label: "uplink.validate"))
            let sources = agent.configuration.sources.map { "\($0.name) (\($0.config.kind.typeName))" }
            let target: String
            switch file.uplink.target {
            case .embedded: target = "an embedded collector"
            case .url(let url): target = url
            }
            summary.append("agent '\(file.agent.id)' with \(sources.count) sources [\(sources.joined(separator: ", "))] streaming to \(target)")
        }
        if let collector = loaded.collector {
            summary.append("collector on \(collector.host):\(collector.port) storing in \(collector.dataDirectory)")
        }
        // Names and paths come from the file: escaped like issues, so the summary stays one line.
        print(ConfigIssue.escapingControlCharacters("\(config): valid: " + summary.joined(separator: "; ")))
    }
}
