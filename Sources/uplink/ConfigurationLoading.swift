import ArgumentParser
import UplinkAgent
import UplinkCollector
import UplinkConfig
import UplinkCore

#if canImport(Glibc)
import Glibc
#endif

/// Loading the YAML file for the subcommands: every issue goes to stderr, one per line, and the process exits 78
/// (EX_CONFIG), never with a stack trace.
enum ConfigurationLoading {
    /// The exit code for a configuration error (sysexits' EX_CONFIG).
    static let configurationErrorExitCode: Int32 = 78

    /// The file at `path`: the agent's sections, decoded by UplinkAgent, and the `collector` section, decoded by
    /// UplinkCollector in the same pass (so every issue is reported, in document order).
    static func load(_ path: String) throws -> LoadedConfiguration {
        var collector: CollectorConfiguration?
        let result = UplinkFile.load(path: path) { collector = CollectorConfiguration.decode($0) }
        guard let file = result.value else {
            for issue in result.issues { printToStandardError(issue.description) }
            let count = result.issues.count
            printToStandardError(
                ConfigIssue.escapingControlCharacters(path)
                    + ": \(count) configuration \(count == 1 ? "issue" : "issues"); nothing was started")
            throw ExitCode(configurationErrorExitCode)
        }
        return LoadedConfiguration(file: file, collector: collector)
    }

    static func printToStandardError(_ line: String) {
        var text = Array(line.utf8)
        text.append(UInt8(ascii: "\n"))
        _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}

/// A configuration file as the subcommands use it.
struct LoadedConfiguration {
    /// The agent's sections (and the `collector` section as written).
    var file: UplinkFile
    /// The `collector` section, decoded; nil when the file has none.
    var collector: CollectorConfiguration?

    /// The collector section, or every default when the file has none.
    var collectorOrDefaults: CollectorConfiguration { collector ?? CollectorConfiguration() }
}
