import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization
import UplinkCore
import UplinkObservability
import UplinkSources
import UplinkTransport
import UplinkWire

/// The assembled agent: sources writing into one circular buffer, drained by one uplink.
///
/// Run `serviceConfigurations` in a `ServiceGroup`. They are ordered so that on graceful shutdown the sources stop
/// first and the uplink then drains what they produced (ServiceGroup stops services in reverse order).
/// `apply(_:)` (a reload) changes the running sources and uplink settings without stopping the others.
public final class Agent: Sendable {
    /// The configuration the agent was started with (a reload does not change it; see `apply(_:)`).
    public let configuration: AgentConfiguration
    /// The circular buffer every source appends to.
    public let ring: RecordRing
    /// Runs the uplink, and replaces it when a reload changes its settings.
    let uplinkHost: UplinkHost
    /// Runs the sources, and starts or stops single ones on a reload.
    let sourceSupervisor: SourceSupervisor
    let logger: Logger
    let encoder = NDJSONFrameEncoder()
    /// The send path's event loop: the uplink's connection and its driver live there, and a reload's successor uplink
    /// takes the same one (docs/architecture.md, "The agent's send path: one event loop").
    let eventLoop: any EventLoop
    /// Where the status reads the remote configuration's state (set by whoever runs a `RemoteConfigAgent`).
    let remoteConfigStatus = Mutex<(@Sendable () -> RemoteConfigStatus)?>(nil)
    /// The streams' remote configuration traffic (hints in, status out), shared by every uplink this agent runs.
    public let remoteConfigRelay = RemoteConfigRelay()

    /// `ring`: a ring built by the caller (`Agent.open` passes one backed by the persistent buffer). `eventLoop`: the
    /// send path's loop (by default one of NIO's singleton group); a process that runs other work on the singleton's
    /// loops (tests, with hundreds of channels) passes a loop of the agent's own, as an agent process has.
    public init(
        configuration: AgentConfiguration, logger: Logger, ring: RecordRing? = nil, eventLoop: (any EventLoop)? = nil
    ) {
        self.configuration = configuration
        let ring = ring ?? RecordRing(capacity: configuration.bufferBytes, policy: configuration.overflow)
        self.ring = ring
        self.logger = logger
        let eventLoop = eventLoop ?? MultiThreadedEventLoopGroup.singleton.next()
        self.eventLoop = eventLoop
        self.uplinkHost = UplinkHost(
            Uplink(
                configuration: configuration.uplink, ring: ring, logger: logger, eventLoop: eventLoop,
                remoteConfig: remoteConfigRelay),
            logger: logger)
        // Stopping runs code that has not run before (checkpoints, closing streams): the ring's free pages go back
        // first, so that it does not come on top of them (after a drained backlog, the whole ring).
        self.sourceSupervisor = SourceSupervisor(shutdownBegins: { ring.releaseFreeMemory() })
        for named in configuration.sources {
            sourceSupervisor.start(
                named.name, kind: named.config.kind.typeName,
                makeSourceService(named, stateDirectory: configuration.stateDirectory, linger: configuration.uplink.linger))
        }
    }

    /// Makes `/v1/status` and `uplink status` show the remote configuration's state as `status` reports it.
    public func reportRemoteConfig(_ status: @escaping @Sendable () -> RemoteConfigStatus) {
        remoteConfigStatus.withLock { $0 = status }
    }

    /// The stream to the collector (the current one: a reload that changes uplink settings replaces it).
    public var uplink: Uplink { uplinkHost.current }

    /// One service per running source, in the order they were started.
    public var sources: [SourceService] { sourceSupervisor.services }

    /// The services to run, uplink first so that it stops last (after it only the persistent buffer's service, which
    /// saves what the drain left).
    public var serviceConfigurations: [ServiceGroupConfiguration.ServiceConfiguration] {
        // The uplink ending (drain done) ends the agent; a source ending or failing ends only that source.
        // The endpoint (agent.metrics_listen) comes first so that it answers until the very end of a shutdown.
        endpointServices + persistenceServices + [
            .init(service: uplinkHost, successTerminationBehavior: .gracefullyShutdownGroup),
            .init(service: sourceSupervisor, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore),
        ]
    }

    /// `/metrics`, `/healthz`, `/readyz` and `/v1/status` on `agent.metrics_listen`, when it is set. The series
    /// come from the process's `MetricsExposition` (bootstrapped by the command) or, without one, only from what the
    /// endpoint reads at scrape time.
    private var endpointServices: [ServiceGroupConfiguration.ServiceConfiguration] {
        guard let address = configuration.metricsListen else { return [] }
        let endpoint = AgentEndpoint(
            address: address, observer: AgentObserver(agent: self, version: Self.version),
            exposition: MetricsExposition.current ?? MetricsExposition(), logger: logger)
        return [.init(service: endpoint, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore)]
    }

    /// The version `uplink --version` prints and the status reports.
    public static let version = "0.1.0"

    func makeSourceService(_ named: AgentConfiguration.NamedSource, stateDirectory: String, linger: Duration) -> SourceService {
        var sourceLogger = logger
        sourceLogger[metadataKey: "source"] = "\(named.name)"
        let sink = RingRecordSink(ring: ring, sourceName: named.name, encoder: encoder)
        return SourceService(
            source: makeSource(name: named.name, config: named.config),
            context: SourceContext(
                sink: sink, logger: sourceLogger, stateDirectory: stateDirectory, linger: linger, eventLoop: eventLoop),
            runsOnEventLoop: named.config.kind.runsOnSendPathLoop
        )
    }
}

/// Runs one source as a service until graceful shutdown.
public struct SourceService: Service {
    public let source: any Source
    public let context: SourceContext
    /// Where the source's task runs its jobs: `context.eventLoop` (the send path's loop, so that what the source
    /// appends is written by the uplink on the same thread) or, nil, Swift's global executor.
    public let executor: (any TaskExecutor)?

    /// Runs `source` with `context`; on `context.eventLoop` when `runsOnEventLoop` (and the context has one).
    public init(source: any Source, context: SourceContext, runsOnEventLoop: Bool = false) {
        self.source = source
        self.context = context
        self.executor = runsOnEventLoop ? context.eventLoop.map { EventLoopTaskExecutor(loop: $0) } : nil
    }

    public func run() async throws {
        do {
            try await withTaskExecutorPreference(executor) {
                try await cancelWhenGracefulShutdown {
                    try await source.run(context: context)
                }
            }
        } catch is CancellationError {
            // Shutdown.
        } catch {
            context.health.failed("stopped: \(error)")
            context.logger.error("source stopped: \(error)")
            throw error
        }
    }
}
