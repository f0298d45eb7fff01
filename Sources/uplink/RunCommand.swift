import ArgumentParser
import Logging
import ServiceLifecycle
import UnixSignals
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkRemoteConfig
import UplinkObservability
import UplinkProcess
import UplinkSources
import UplinkTransport

#if canImport(Glibc)
import Glibc
#endif

/// `uplink run`: the agent.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run the agent: sample its sources and stream the records to a collector.",
        discussion: """
            With --config the file describes everything (see examples.yaml and docs/configuration.md). Without it, \
            a quickstart agent samples cpu and memory, shaped by the options below. With the URL 'embedded' (the \
            default) the agent starts a collector inside the same process on a free loopback port and prints every \
            record it receives, so records flow end to end with nothing else running. Stop with Ctrl-C or SIGTERM: \
            the agent drains what it buffered (up to its drain timeout, 5 s by default) and exits. SIGHUP reloads \
            the --config file without restarting (an invalid file is reported and changes nothing).

            An https:// collector is verified against the system trust store (or SSL_CERT_FILE / SSL_CERT_DIR); \
            uplink.tls in a file sets a private CA, a client certificate, a server name and a minimum version. \
            Unless uplink.proxy says otherwise, HTTPS_PROXY / HTTP_PROXY / NO_PROXY choose an HTTP CONNECT proxy.
            """
    )

    @Option(name: .shortAndLong, help: "YAML configuration file. The quickstart options below then do not apply.")
    var config: String?

    @Option(help: "Quickstart: collector base URL, or 'embedded' for an in-process collector that prints what it receives.")
    var url: String = "embedded"

    @Option(help: "Quickstart: this agent's id, sent with every stream. Default: the host name.")
    var agentId: String?

    @Option(help: "Quickstart: bearer token for the collector.")
    var token: String?

    @Option(help: "Quickstart: seconds between cpu and memory samples.")
    var interval: Double = 2

    @Option(help: "Quickstart: also run a generator source producing this many synthetic log records per second.")
    var generatorRate: Double?

    @Option(help: "Quickstart: size of the circular buffer in bytes.")
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
        // Before any agent or collector exists: their counters bind to the backend when they are created.
        _ = MetricsExposition.bootstrap()
        let logger = Logger(label: "uplink")
        FileDescriptorLimit.raiseSoftLimit(logger: logger)
        var embedded: BackgroundCollector?
        let configuration: AgentConfiguration
        var loaded: UplinkFile?
        var embeddedTarget: EmbeddedCollectorTarget?
        var remoteStartup: RemoteConfigAgent<ContinuousClock>.Startup?
        if let config {
            let loadedFile = try ConfigurationLoading.load(config)
            let file = loadedFile.file
            loaded = file
            guard file.configuresAgent else {
                ConfigurationLoading.printToStandardError(
                    "\(config): configures only a collector (no uplink or sources); run it with `uplink collector --config \(config)`")
                throw ExitCode(ConfigurationLoading.configurationErrorExitCode)
            }
            if file.uplink.target == .embedded {
                let collector = loadedFile.collectorOrDefaults
                let started = try await EmbeddedCollector.start(configuration: collector, logger: logger)
                embedded = started
                embeddedTarget = EmbeddedCollectorTarget(url: started.url, token: collector.token)
            }
            // The last-known-good remote sources start with the local ones: the agent never waits for the collector.
            // With remote_config off this touches nothing (a reload may turn it on).
            remoteStartup = RemoteConfigAgent<ContinuousClock>.startup(
                local: file, store: RemoteConfigStore(stateDirectory: file.agent.stateDirectory), logger: logger)
            configuration = RunningConfiguration.merged(local: file, remote: remoteStartup?.sources ?? []).file
                .agentConfiguration(embedded: embeddedTarget)
            if case .url(let url) = file.uplink.target {
                switch file.uplink.proxy {
                case .environment: Self.logProxyEnvironment(url: url, logger: logger)
                case .none: logger.info("uplink.proxy is 'none': connecting directly")
                case .proxy: break
                }
            }
        } else {
            if url == "embedded" {
                embedded = try await EmbeddedCollector.startQuickstart(logger: logger)
            }
            configuration = quickstartConfiguration(collectorURL: embedded?.url ?? url)
        }
        if let embedded { logger.info("embedded collector listening", metadata: ["url": "\(embedded.url)"]) }
        if config == nil, url != "embedded" { Self.logProxyEnvironment(url: url, logger: logger) }

        let agent: Agent
        do {
            agent = try Agent.open(configuration: configuration, logger: logger)
        } catch {
            ConfigurationLoading.printToStandardError("\(error)")
            throw ExitCode(ConfigurationLoading.configurationErrorExitCode)
        }
        // Last, so that it runs once the uplink and sources have been started (READY=1) and hears of a graceful
        // shutdown first (STOPPING=1). The embedded collector, if any, already listens. No-op without $NOTIFY_SOCKET.
        let notifier = SystemdNotifierService(
            status: "streaming \(configuration.sources.count) sources to \(embedded == nil ? configuration.uplink.url : "the embedded collector")",
            logger: logger)
        // SIGHUP reloads the file. Trapped before anything reports that the agent runs: from then on a SIGHUP must
        // not end the process (its default action).
        let running = loaded.map {
            RunningConfiguration(agent: agent, local: $0, remote: remoteStartup?.sources ?? [], embedded: embeddedTarget)
        }
        var remote: RemoteConfigAgent<ContinuousClock>?
        if let file = loaded, let running, let startup = remoteStartup {
            let target = embeddedTarget
            let remoteAgent = RemoteConfigAgent(
                startup: startup, local: file, store: RemoteConfigStore(stateDirectory: file.agent.stateDirectory),
                client: { file in
                    RemoteConfigClient(
                        uplink: file.agentConfiguration(embedded: target).uplink, labels: file.remoteConfig.labels,
                        logger: logger, clock: ContinuousClock())
                },
                configuration: running, agent: agent, clock: ContinuousClock(), logger: logger)
            agent.reportRemoteConfig { remoteAgent.status }
            agent.remoteConfigRelay.deliver { hint in
                if let revision = SHA256Digest(prefixed: hint.revision) { remoteAgent.hint(revision: revision) }
            }
            remote = remoteAgent
        }
        // A reload also reads the embedded collector's collector.remote_config.dir again (as SIGHUP does for
        // `uplink collector`), and makes the remote configuration check what runs against the new file.
        let embeddedCollector = embedded?.collector
        let reloader = ConfigurationReloader(
            agent: agent, path: config, configuration: running,
            afterReload: { [remote] in
                _ = embeddedCollector?.reloadRemoteConfig()
                remote?.localFileChanged()
            },
            // Parsing and checking the file ran code that streaming does not need: its pages need not stay resident.
            afterAttempt: { StartupCodePages.release(logger: logger, after: "reload") },
            collectorSection: { _ = CollectorConfiguration.decode($0) },
            signals: await UnixSignalsSequence(trapping: .sighup), logger: logger)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: agent.serviceConfigurations + (remote.map { [.init(service: $0, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore)] } ?? [])
                    + [reloader.serviceConfiguration, notifier.serviceConfiguration],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            )
        )
        logger.info("agent running", metadata: [
            "agent": "\(configuration.uplink.agentID)", "sources": "\(configuration.sources.map(\.name))",
        ])
        // Argument parsing, the YAML parser, configuration checks and opening the buffer are done: their code pages
        // need not stay resident while the ring fills (the peak RSS while a backlog drains must stay within the ring's
        // capacity + 16 MiB, which deploy/test-packaging.sh checks).
        StartupCodePages.release(logger: logger, after: "start")
        try await group.run()
        try await embedded?.stop()
        let statistics = agent.ring.statistics()
        logger.info("agent stopped", metadata: [
            "acknowledged": "\(statistics.acknowledged)", "unacknowledged": "\(statistics.retainedFrames)",
        ])
    }

    private func quickstartConfiguration(collectorURL: String) -> AgentConfiguration {
        let sampleInterval = Duration.milliseconds(Int64(interval * 1000))
        var sources: [AgentConfiguration.NamedSource] = [
            .init(name: "cpu", config: SourceConfig(CPUConfig(interval: sampleInterval))),
            .init(name: "memory", config: SourceConfig(MemoryConfig(interval: sampleInterval))),
        ]
        if let generatorRate {
            sources.append(.init(name: "generator", config: SourceConfig(GeneratorConfig(rate: generatorRate))))
        }
        var uplink = UplinkConfiguration(
            url: collectorURL, agentID: agentId ?? AgentConfiguration.hostName(), token: token,
            tls: UplinkTLS().withTrustEnvironment(Self.environment))
        if url != "embedded",
            case .proxy(let proxy, _) = ProxyEnvironment.resolve(collectorURL: collectorURL, environment: Self.environment)
        {
            uplink.proxy = proxy
        }
        return AgentConfiguration(uplink: uplink, sources: sources, bufferBytes: bufferBytes)
    }

    /// The process environment, for `SSL_CERT_*` and the proxy variables.
    private static func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Says which proxy the environment chose, if any, or why a proxy variable was ignored.
    private static func logProxyEnvironment(url: String, logger: Logger) {
        switch ProxyEnvironment.resolve(collectorURL: url, environment: environment) {
        case .direct: break
        case .exempt(let entry):
            logger.info("NO_PROXY exempts the collector: connecting directly", metadata: ["entry": "\(entry)"])
        case .proxy(let proxy, let variable):
            logger.info("using the proxy from the environment", metadata: ["variable": "\(variable)", "proxy": "\(proxy)"])
        case .invalid(let variable, let problem):
            logger.error("\(variable) ignored, connecting directly: \(problem)")
        }
    }
}
