import ArgumentParser
import Logging
import ServiceLifecycle
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkSources
import UplinkTransport

#if canImport(Glibc)
import Glibc
#endif

/// `uplink run`: the agent.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the agent: sample cpu and memory and stream the records to a collector.",
        discussion: """
            With --url embedded (the default) the agent starts a collector inside the same process on a free \
            loopback port and prints every record it receives, so records flow end to end with nothing else \
            running. Stop with Ctrl-C or SIGTERM: the agent drains what it buffered (up to 5 s) and exits.
            """
    )

    @Option(help: "Collector base URL, or 'embedded' for an in-process collector that prints what it receives.")
    var url: String = "embedded"

    @Option(help: "This agent's id, sent with every stream. Default: the host name.")
    var agentId: String?

    @Option(help: "Bearer token for the collector.")
    var token: String?

    @Option(help: "Seconds between cpu and memory samples.")
    var interval: Double = 2

    @Option(help: "Also run a generator source producing this many synthetic log records per second.")
    var generatorRate: Double?

    @Option(help: "Size of the circular buffer in bytes.")
    var bufferBytes: Int = RecordRing.defaultCapacity

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard interval > 0, interval.isFinite else { throw ValidationError("--interval must be a positive number of seconds") }
        guard bufferBytes >= 4096 else { throw ValidationError("--buffer-bytes must be at least 4096") }
        if url != "embedded", !(url.hasPrefix("http://") || url.hasPrefix("https://")) {
            throw ValidationError("--url must be 'embedded' or start with http:// or https://, got '\(url)'")
        }
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "uplink")
        let sampleInterval = Duration.milliseconds(Int64(interval * 1000))
        var sources: [AgentConfiguration.NamedSource] = [
            .init(name: "cpu", config: .cpu(CPUConfig(interval: sampleInterval))),
            .init(name: "memory", config: .memory(MemoryConfig(interval: sampleInterval))),
        ]
        if let generatorRate {
            sources.append(.init(name: "generator", config: .generator(GeneratorConfig(rate: generatorRate))))
        }

        var embedded: EmbeddedCollector?
        var collectorURL = url
        if url == "embedded" {
            let started = try await EmbeddedCollector.start(logger: logger)
            embedded = started
            collectorURL = "http://127.0.0.1:\(started.port)"
            logger.info("embedded collector listening", metadata: ["url": "\(collectorURL)"])
        }

        let uplinkConfiguration = UplinkConfiguration(
            url: collectorURL, agentID: agentId ?? AgentConfiguration.hostName(), token: token)
        let agent = Agent(
            configuration: AgentConfiguration(uplink: uplinkConfiguration, sources: sources, bufferBytes: bufferBytes),
            logger: logger
        )
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: agent.serviceConfigurations,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        logger.info("agent running", metadata: ["agent": "\(uplinkConfiguration.agentID)", "sources": "\(sources.map(\.name))"])
        try await group.run()
        try await embedded?.stop()
        let statistics = agent.ring.statistics()
        logger.info("agent stopped", metadata: [
            "acknowledged": "\(statistics.acknowledged)", "unacknowledged": "\(statistics.retainedFrames)",
        ])
    }
}
