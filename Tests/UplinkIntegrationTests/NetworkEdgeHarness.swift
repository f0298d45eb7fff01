import Foundation
import Logging
import ServiceLifecycle
import Synchronization
import UplinkAgent
import UplinkCore
import UplinkTestSupport
import UplinkTransport

/// A log handler that keeps every message (and forwards nothing), so tests can check what the agent told the operator.
struct CapturingLogHandler: LogHandler {
    final class Store: Sendable {
        private let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
        func contains(_ text: String) -> Bool { all.contains { $0.contains(text) } }
    }

    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        store.append("\(event.level) \(event.message)")
        if ProcessInfo.processInfo.environment["UPLINK_TEST_LOG"] != nil {
            FileHandle.standardError.write(Data("\(event.level) \(event.message) \(event.metadata ?? [:])\n".utf8))
        }
    }
}

/// An agent built from an `UplinkConfiguration` (TLS, proxy, …) with a capturing logger, run as a service group.
final class NetworkAgent: Sendable {
    let agent: Agent
    let log = CapturingLogHandler.Store()
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    init(_ uplink: UplinkConfiguration, sources: [AgentConfiguration.NamedSource]) {
        var uplink = uplink
        uplink.jitterSeed = 7
        uplink.backoff = Backoff(initial: .milliseconds(20), multiplier: 2, maximum: .milliseconds(300))
        let store = log
        let logger = Logger(label: "uplink.test.network") { _ in CapturingLogHandler(store: store) }
        let agent = Agent(
            configuration: AgentConfiguration(
                uplink: uplink, sources: sources, bufferBytes: 8 << 20,
                stateDirectory: Harness.agentStateDirectory()),
            logger: logger)
        let group = ServiceGroup(
            configuration: .init(services: agent.serviceConfigurations, gracefulShutdownSignals: [], logger: logger))
        self.agent = agent
        self.group = group
        self.task = Task { try await group.run() }
    }

    var ring: RecordRing { agent.ring }
    var uplink: Uplink { agent.uplink }

    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
    }

    func waitUntilAllAcknowledged(records: Int, timeout: Duration) async -> Bool {
        await eventually(timeout: timeout) {
            let statistics = ring.statistics()
            return statistics.nextToWrite > UInt64(records) && statistics.acknowledged + 1 >= statistics.nextToWrite
        }
    }
}

/// The agent's TLS settings from the shared test authority.
extension TestPKI {
    /// Agent TLS settings trusting this CA and presenting the client certificate.
    var mutualTLS: UplinkTLS {
        UplinkTLS(caFile: authority.certificateFile, certificateFile: agent.certificateFile, keyFile: agent.keyFile, minimumVersion: .tls13)
    }
}
