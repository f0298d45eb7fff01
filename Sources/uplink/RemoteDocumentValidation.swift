import Logging
import ServiceLifecycle
import UnixSignals
import UplinkCollector
import UplinkConfig
import UplinkRemoteConfig

/// How the collector checks the remote documents it serves (`collector.remote_config`): with the agent's own
/// validator, which the collector module cannot import, so the executable hands it over.
enum RemoteDocumentValidation {
    /// The validator every collector of this executable (`uplink collector`, the embedded one) uses.
    ///
    /// THE PLUG-IN POINT for the agent's `RemoteDocument` validator (UplinkAgent, issue #32 item 2): replace this
    /// body with a call to it. Until it lands this is an interim check: the document parses as YAML (no anchors
    /// resolved away, no `${…}` expanded) and holds exactly a top-level `sources:` list.
    static let validator: RemoteDocumentValidator = { name, bytes, sha256 in
        interimIssues(name: name, bytes: bytes, sha256: sha256)
    }

    /// The interim check; each issue is one sentence with `remote:<name>@<sha256 prefix>:LINE:COL`.
    static func interimIssues(name: String, bytes: [UInt8], sha256: SHA256Digest) -> [String] {
        let file = "remote:\(name)@\(sha256.hex.prefix(12))"
        let document = ConfigDocument.parse(bytes: bytes, file: file, environment: ConfigEnvironment([:]))
        if !document.issues.isEmpty { return document.issues.map(\.description) }
        guard let root = document.root, let entries = root.entries else {
            return ["\(file): a remote document is a mapping with one key, sources"]
        }
        var issues: [String] = []
        for entry in entries where entry.name != "sources" {
            issues.append("\(entry.key.mark): '\(entry.name)' is not allowed in a remote document (only sources)")
        }
        if let sources = root["sources"] {
            if sources.items == nil { issues.append("\(sources.mark): sources must be a list") }
        } else {
            issues.append("\(root.mark): a remote document needs a top-level sources list")
        }
        return issues
    }
}

/// Reloads the collector's remote configuration on every SIGHUP (`Collector.reloadRemoteConfig()`); a reload that
/// fails keeps the previous documents, and the collector logs why.
struct RemoteConfigReloadService: Service {
    let collector: Collector
    let signals: UnixSignalsSequence
    let logger: Logger

    var serviceConfiguration: ServiceGroupConfiguration.ServiceConfiguration {
        .init(service: self, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore)
    }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            for await _ in signals {
                if collector.reloadRemoteConfig() == nil {
                    logger.info("SIGHUP ignored: this collector has no collector.remote_config to reload")
                }
            }
        }
    }
}
