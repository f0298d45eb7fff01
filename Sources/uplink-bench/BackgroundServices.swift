import Logging
import ServiceLifecycle

/// Services (an agent's, a collector) running in their own group on a background task, without signal handling,
/// until `stop()`: how every benchmark runs what it measures.
struct BackgroundServices {
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    /// Starts `services`.
    init(_ services: [ServiceGroupConfiguration.ServiceConfiguration], logger: Logger) {
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [], logger: logger))
        self.group = group
        task = Task { try await group.run() }
    }

    /// Shuts the services down gracefully and waits until they have stopped, rethrowing what ended the group.
    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }
}
