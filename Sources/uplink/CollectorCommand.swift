import ArgumentParser
import Logging
import ServiceLifecycle
import UnixSignals
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkObservability
import UplinkProcess

/// `uplink collector`: the receiving server.
struct CollectorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "collector",
        abstract: "Receive agent streams, acknowledge, de-duplicate and store the records.",
        discussion: """
            Records go to <data-dir>/records.jsonl (one JSON object per line, with agent and epoch) and, unless \
            --no-stdout, to stdout in a readable form. Per-agent marks survive restarts, so a restarted collector \
            neither stores duplicates nor asks agents for data it already has.
            """
    )

    @Option(name: .shortAndLong, help: "YAML configuration file whose `collector` section to use; the options below then do not apply.")
    var config: String?

    @Option(help: "Address to listen on.")
    var host: String = "127.0.0.1"

    @Option(help: "Port to listen on (0: any free port, printed at start).")
    var port: Int = 4318

    @Option(help: "Directory for records.jsonl, marks.log and rejects.jsonl.")
    var dataDir: String = "./collector-data"

    @Option(help: "Require 'Authorization: Bearer <token>' from agents.")
    var token: String?

    @Option(help: "Longest accepted record line in bytes; longer lines are counted and skipped.")
    var maxLineBytes: Int = 1 << 20

    @Flag(inversion: .prefixedNo, help: "Print received records to stdout.")
    var stdout: Bool = true

    @Flag(inversion: .prefixedNo, help: "Store received records in <data-dir>/records.jsonl.")
    var jsonl: Bool = true

    @Flag(help: "fsync records.jsonl before acknowledging (survives power loss, not only crashes).")
    var fsync: Bool = false

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard maxLineBytes >= 1024 else { throw ValidationError("--max-line-bytes must be at least 1024") }
    }

    func run() async throws {
        logging.bootstrap()
        // Before any agent or collector exists: their counters bind to the backend when they are created.
        _ = MetricsExposition.bootstrap()
        let logger = Logger(label: "uplink.collector")
        FileDescriptorLimit.raiseSoftLimit(logger: logger)
        CollectorHeap.keepFreedMemory(logger: logger)
        var configuration = CollectorConfiguration()
        if let config {
            configuration = try ConfigurationLoading.load(config).collectorOrDefaults
        } else {
            configuration.host = host
            configuration.port = port
            configuration.dataDirectory = dataDir
            configuration.token = token
            configuration.maxLineBytes = maxLineBytes
            configuration.stdoutSink = stdout
            configuration.jsonlSink = jsonl
            configuration.fsync = fsync
        }
        let collector = Collector(
            configuration: configuration, logger: logger, documentValidator: RemoteDocumentValidation.validator)
        // SIGHUP reloads collector.remote_config.dir (trapped before the collector listens: from then on a SIGHUP
        // must not end the process).
        let reloader = RemoteConfigReloadService(
            collector: collector, signals: await UnixSignalsSequence(trapping: .sighup), logger: logger)
        // READY=1 once the collector listens, STOPPING=1 when a graceful shutdown begins (no-op without $NOTIFY_SOCKET).
        let host = configuration.host
        let notifier = SystemdNotifierService(logger: logger) {
            let port = try await collector.waitUntilListening()
            return "listening on \(host):\(port)"
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [.init(service: collector), reloader.serviceConfiguration, notifier.serviceConfiguration],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        Task {
            if let bound = try? await collector.waitUntilListening() {
                logger.info("collector listening", metadata: [
                    "host": "\(configuration.host)", "port": "\(bound)", "data_dir": "\(configuration.dataDirectory)",
                ])
            }
        }
        try await group.run()
    }
}
