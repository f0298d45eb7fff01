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

    static func start(logger: Logger) async throws -> EmbeddedCollector {
        var template = Array("/tmp/uplink-embedded-XXXXXX".utf8CString)
        guard let directory = mkdtemp(&template) else {
            throw CollectorError(code: "data_dir", message: "cannot create a temporary directory for the embedded collector")
        }
        var configuration = CollectorConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.dataDirectory = String(cString: directory)
        configuration.stdoutSink = true
        configuration.jsonlSink = false
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
