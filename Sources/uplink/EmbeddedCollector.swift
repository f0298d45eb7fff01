import Logging
import ServiceLifecycle
import UplinkCollector

#if canImport(Glibc)
import Glibc
#endif

/// The in-process collector of `uplink run --url embedded`: loopback, a free port, records printed to stdout,
/// state in a fresh temporary directory.
struct EmbeddedCollector {
    let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// The base URL agents use.
    var url: String { "http://127.0.0.1:\(port)" }

    /// The quickstart's collector: prints records, keeps its state in a fresh temporary directory.
    static func startQuickstart(logger: Logger) async throws -> EmbeddedCollector {
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

    /// Starts `configuration` on a free loopback port, whatever its listen address says: an embedded collector
    /// serves only the agent in its own process.
    static func start(configuration: CollectorConfiguration, logger: Logger) async throws -> EmbeddedCollector {
        var configuration = configuration
        configuration.host = "127.0.0.1"
        configuration.port = 0
        var collectorLogger = logger
        collectorLogger[metadataKey: "component"] = "embedded-collector"
        let collector = Collector(configuration: configuration, logger: collectorLogger)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [collector], gracefulShutdownSignals: [], logger: collectorLogger))
        let task = Task { try await group.run() }
        let port = try await collector.waitUntilListening()
        return EmbeddedCollector(port: port, group: group, task: task)
    }

    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }
}
