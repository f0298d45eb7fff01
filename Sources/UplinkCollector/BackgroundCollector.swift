import Logging
import ServiceLifecycle

/// A collector running in its own service group on a background task: the agent's embedded collector
/// (`uplink.url: embedded`), tests and benchmarks. Signals are not handled here; call `stop()`.
public final class BackgroundCollector: Sendable {
    public let collector: Collector
    /// The port it listens on (the configured one, or the one the system chose for port 0).
    public let port: Int
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    private init(collector: Collector, port: Int, group: ServiceGroup, task: Task<Void, any Error>) {
        self.collector = collector
        self.port = port
        self.group = group
        self.task = task
    }

    /// Starts the collector and returns once it listens; `documentValidator` as for `Collector.init`.
    public static func start(
        configuration: CollectorConfiguration, logger: Logger, stdout: any CollectorOutput = StandardOutput(),
        documentValidator: RemoteDocumentValidator? = nil
    ) async throws -> BackgroundCollector {
        let collector = Collector(
            configuration: configuration, logger: logger, stdout: stdout, documentValidator: documentValidator)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [collector], gracefulShutdownSignals: [], logger: logger))
        let task = Task { try await group.run() }
        do {
            let port = try await collector.waitUntilListening()
            return BackgroundCollector(collector: collector, port: port, group: group, task: task)
        } catch {
            await group.triggerGracefulShutdown()
            _ = try? await task.value
            throw error
        }
    }

    /// The base URL agents use: `http://<host>:<port>`.
    public var url: String { "http://\(collector.configuration.host):\(port)" }

    /// Shuts the collector down gracefully (open streams end after their current batch) and waits for it.
    public func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }
}
