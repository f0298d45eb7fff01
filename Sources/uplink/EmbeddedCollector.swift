import Logging
import UplinkCollector

#if canImport(Glibc)
import Glibc
#endif

/// The in-process collector of `uplink run` with the URL `embedded`: it serves only the agent in the same process,
/// so it always listens on a free loopback port in plaintext, whatever a configuration's `collector.listen` and
/// `collector.tls` say.
enum EmbeddedCollector {
    /// The quickstart's collector: prints records, keeps its state in a fresh temporary directory.
    static func startQuickstart(logger: Logger) async throws -> BackgroundCollector {
        var template = Array("/tmp/uplink-embedded-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else {
            throw CollectorError(code: "data_dir", message: "cannot create a temporary directory for the embedded collector")
        }
        var configuration = CollectorConfiguration()
        configuration.dataDirectory = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        configuration.stdoutSink = true
        configuration.jsonlSink = false
        return try await start(configuration: configuration, logger: logger)
    }

    /// Starts `configuration` (its sinks, data directory and token) on a free loopback port.
    static func start(configuration: CollectorConfiguration, logger: Logger) async throws -> BackgroundCollector {
        var configuration = configuration
        configuration.host = "127.0.0.1"
        configuration.port = 0
        // The agent in the same process connects over loopback in plaintext.
        configuration.tls = nil
        var collectorLogger = logger
        collectorLogger[metadataKey: "component"] = "embedded-collector"
        return try await BackgroundCollector.start(
            configuration: configuration, logger: collectorLogger, documentValidator: RemoteDocumentValidation.validator)
    }
}
