import Logging
import ServiceLifecycle
import UnixSignals
import UplinkCollector
import UplinkAgent
import UplinkRemoteConfig

/// How the collector checks the remote documents it serves (`collector.remote_config`): with the agent's own
/// validator, which the collector module cannot import, so the executable hands it over.
enum RemoteDocumentValidation {
    /// The validator every collector of this executable (`uplink collector`, the embedded one) uses: the agent's
    /// `RemoteDocument` rules (only `sources:`, no `${…}`, no anchors or aliases, no secrets or relative paths, no
    /// generator, each source through the same decoders as a local file). Each box also checks its own `allow` and
    /// `max_document_bytes`, which the collector does not know; here the largest size any box may accept applies.
    static let validator: RemoteDocumentValidator = { name, bytes, sha256 in
        RemoteDocument.decode(
            name: name, bytes: bytes, sha256: sha256.hex,
            maxBytes: UplinkFile.RemoteConfigSection.documentBytesRange.maximum
        ).issues.map(\.description)
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
