import AsyncHTTPClient
import Logging
import ServiceLifecycle
import UplinkCore
import UplinkSources
import UplinkTransport
import UplinkWire

/// The assembled agent: sources writing into one circular buffer, drained by one uplink.
///
/// Run `serviceConfigurations` in a `ServiceGroup`. They are ordered so that on graceful shutdown the sources stop
/// first and the uplink then drains what they produced (ServiceGroup stops services in reverse order).
public final class Agent: Sendable {
    public let configuration: AgentConfiguration
    /// The circular buffer every source appends to.
    public let ring: RecordRing
    /// The stream to the collector.
    public let uplink: Uplink
    /// One service per configured source, in configuration order.
    public let sources: [SourceService]

    /// `ring`: a ring built by the caller (`Agent.open` passes one backed by the persistent buffer).
    public init(configuration: AgentConfiguration, logger: Logger, httpClient: HTTPClient? = nil, ring: RecordRing? = nil) {
        self.configuration = configuration
        let ring = ring ?? RecordRing(capacity: configuration.bufferBytes, policy: configuration.overflow)
        self.ring = ring
        self.uplink = Uplink(configuration: configuration.uplink, ring: ring, logger: logger, httpClient: httpClient)
        let encoder = NDJSONFrameEncoder()
        self.sources = configuration.sources.map { named in
            var sourceLogger = logger
            sourceLogger[metadataKey: "source"] = "\(named.name)"
            let sink = RingRecordSink(ring: ring, sourceName: named.name, encoder: encoder)
            return SourceService(
                source: makeSource(name: named.name, config: named.config),
                context: SourceContext(sink: sink, logger: sourceLogger, stateDirectory: configuration.stateDirectory)
            )
        }
    }

    /// The services to run, uplink first so that it stops last (after it only the persistent buffer's service, which
    /// saves what the drain left).
    public var serviceConfigurations: [ServiceGroupConfiguration.ServiceConfiguration] {
        // The uplink ending (drain done) ends the agent; a source ending or failing ends only that source.
        persistenceServices + [.init(service: uplink, successTerminationBehavior: .gracefullyShutdownGroup)]
            + sources.map { .init(service: $0, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore) }
    }
}

/// Runs one source as a service until graceful shutdown.
public struct SourceService: Service {
    public let source: any Source
    public let context: SourceContext

    public init(source: any Source, context: SourceContext) {
        self.source = source
        self.context = context
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                try await source.run(context: context)
            }
        } catch is CancellationError {
            // Shutdown.
        } catch {
            context.logger.error("source stopped: \(error)")
            throw error
        }
    }
}
