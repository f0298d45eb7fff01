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

    static func load(_ path: String) throws -> UplinkFile {
        let result = UplinkFile.load(path: path)
        guard let file = result.value else {
            for issue in result.issues { printToStandardError(issue.description) }
            let count = result.issues.count
            printToStandardError(
                ConfigIssue.escapingControlCharacters(path)
                    + ": \(count) configuration \(count == 1 ? "issue" : "issues"); nothing was started")
            throw ExitCode(configurationErrorExitCode)
        }
        return file
    }

    static func printToStandardError(_ line: String) {
        var text = Array(line.utf8)
        text.append(UInt8(ascii: "\n"))
        _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
    }
}

extension CollectorConfiguration {
    /// The collector settings of a configuration file's `collector` section (defaults when it has none).
    init(_ section: UplinkFile.CollectorSection) {
        self.init(
            host: section.listen.host,
            port: section.listen.port,
            dataDirectory: section.dataDirectory,
            stdoutSink: section.stdout,
            jsonlSink: section.jsonl,
            token: section.token,
            maxLineBytes: section.maxLineBytes,
            rejectsFile: section.rejectsFile,
            fsync: section.fsync,
            requestHeadTimeout: section.requestHeadTimeout,
            streamIdleTimeout: section.streamIdleTimeout,
            maxStreams: section.maxStreams,
            tls: section.tls.map(CollectorTLS.init)
        )
        acceptEncodings = Set(section.acceptEncodings)
        if let forwarding = section.forwarding { applyForwarding(forwarding) }
    }
}
