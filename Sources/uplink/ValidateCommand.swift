import ArgumentParser
import Logging
import UplinkAgent
import UplinkCollector
import UplinkConfig
import UplinkCore
import UplinkRemoteConfig

/// `uplink validate`: the same build path as `run`, without starting anything.
struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check a configuration file and report every problem; start nothing.",
        discussion: """
            Exits 0 when the file is valid and 78 when it is not, printing FILE:LINE:COL: key: message lines. With \
            --remote, also checks remote configuration documents as the agent would apply them: each within the \
            local file's remote_config (its allow-list, its size limit), added to the local sources; their issues \
            name them remote:<name>@<sha256 prefix>.
            """
    )

    @Option(name: .shortAndLong, help: "The YAML configuration file.")
    var config: String

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A remote configuration document to check against the file's remote_config (repeatable, in assignment order).",
            valueName: "document"))
    var remote: [String] = []

    /// Largest remote document read (what the local file allows is checked after reading).
    static let maximumRemoteFileBytes = 64 << 20

    func run() throws {
        let loaded = try ConfigurationLoading.load(config)
        var file = loaded.file
        warnAboutInterpreters(file.remoteConfig.allow.exec)
        if !remote.isEmpty { file = try merged(file) }
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
        if !remote.isEmpty {
            let count = file.sources.count - loaded.file.sources.count
            let documents = remote.count == 1 ? "document" : "documents"
            summary.append("\(remote.count) remote \(documents) adding \(count) \(count == 1 ? "source" : "sources")")
        }
        if let collector = loaded.collector {
            summary.append("collector on \(collector.host):\(collector.port) storing in \(collector.dataDirectory)")
        }
        // Names and paths come from the file: escaped like issues, so the summary stays one line.
        print(ConfigIssue.escapingControlCharacters("\(config): valid: " + summary.joined(separator: "; ")))
    }

    /// The local file with the `--remote` documents' sources, as a box would merge them; every issue is printed and
    /// the command exits 78 when there is one.
    private func merged(_ local: UplinkFile) throws -> UplinkFile {
        var documents: [(name: String, bytes: [UInt8], sha256: String)] = []
        var issues: [ConfigIssue] = []
        for path in remote {
            switch ConfigFiles.read(path: path, limit: Self.maximumRemoteFileBytes) {
            case .success(let bytes):
                documents.append((Self.documentName(path), bytes, SHA256Digest(of: bytes).hex))
            case .failure(let error):
                issues.append(ConfigIssue(
                    file: path, line: 0, column: 0, keyPath: "", code: .unreadable,
                    message: "cannot read the remote document: \(error)"))
            }
        }
        let result = RemoteConfiguration.merge(local: local, documents: documents)
        issues += result.issues
        guard let file = result.value, issues.isEmpty else {
            for issue in issues { ConfigurationLoading.printToStandardError(issue.description) }
            ConfigurationLoading.printToStandardError(
                "\(issues.count) configuration \(issues.count == 1 ? "issue" : "issues") in the remote documents; nothing was started")
            throw ExitCode(ConfigurationLoading.configurationErrorExitCode)
        }
        return file
    }

    /// A document's name for `--remote FILE`: the file name without its directory and its `.yaml`/`.yml` extension.
    static func documentName(_ path: String) -> String {
        var name = path.split(separator: "/").last.map(String.init) ?? path
        for suffix in [".yaml", ".yml"] where name.hasSuffix(suffix) && name.count > suffix.count {
            name.removeLast(suffix.count)
        }
        return name
    }

    /// `allow.exec` patterns that run a shell or an interpreter let whoever signs documents run anything on the box.
    private func warnAboutInterpreters(_ patterns: [[String]]) {
        let interpreters = [
            "sh", "bash", "dash", "zsh", "ash", "busybox", "env", "python", "perl", "ruby", "node", "lua", "php",
        ]
        for pattern in patterns {
            guard let program = pattern.first?.split(separator: "/").last.map(String.init) else { continue }
            let base = program.split(separator: ".").first.map(String.init) ?? program
            // `python3`, `perl5.36`: an interpreter's name followed by a version.
            let isInterpreter = interpreters.contains { base.hasPrefix($0) && base.dropFirst($0.count).allSatisfy(\.isNumber) }
            guard isInterpreter else { continue }
            let command = pattern.joined(separator: " ")
            ConfigurationLoading.printToStandardError(ConfigIssue.escapingControlCharacters(
                "\(config): warning: remote_config.allow.exec allows '\(command)': a shell or interpreter in a remote "
                    + "command amounts to remote code execution"))
        }
    }
}
