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

/// An idle agent: every sensor that works with its defaults, sampling every 10 s, streaming to a collector in this
/// process over loopback. Reports the CPU share of one core (getrusage delta / wall time, agent and collector
/// together) and the resident memory over `seconds`.
enum IdleBenchmark {
    /// The sensor kinds run with their default configuration (`sysfs` and `exec` need a path or a command, and the
    /// generator is not a sensor).
    static let kinds: [SourceKind] = [
        CPUConfig.kind, MemoryConfig.kind, LoadConfig.kind, UptimeConfig.kind, NetworkConfig.kind, DiskIOConfig.kind,
        DiskConfig.kind, ThermalConfig.kind, HwmonConfig.kind, PowerConfig.kind,
    ]

    /// The sensors' run, then the same agent and collector without any source (the baseline the sensors add to).
    static func run(seconds: Int, logger: Logger) async throws -> [BenchmarkResult] {
        [
            try await measure(kinds: kinds, seconds: seconds, logger: logger),
            try await measure(kinds: [], seconds: seconds, logger: logger),
        ]
    }

    private static func measure(kinds: [SourceKind], seconds: Int, logger: Logger) async throws -> BenchmarkResult {
        let directory = try temporaryDirectory(prefix: "uplink-idle")
        defer {
            for name in ["records.jsonl", "marks.log", "rejects.jsonl", "marks.log.tmp"] { unlink(directory + "/" + name) }
            rmdir(directory)
        }
        let collector = try await BackgroundCollector.start(
            configuration: CollectorConfiguration(port: 0, dataDirectory: directory, stdoutSink: false), logger: logger)

        let agent = Agent(
            configuration: AgentConfiguration(
                uplink: UplinkConfiguration(url: collector.url, agentID: "idle"),
                sources: kinds.map { .init(name: $0.typeName, config: $0.defaultConfig) }
            ),
            logger: logger
        )
        let agentGroup = BackgroundServices(agent.serviceConfigurations, logger: logger)
        while agent.uplink.statistics().streamsOpened == 0 { try await Task.sleep(for: .milliseconds(5)) }
        // Let start-up work (discovery, first samples, connection set-up) pass before measuring.
        try await Task.sleep(for: .seconds(11))

        let before = ResourceUsage.now()
        let recordsBefore = agent.ring.statistics().acknowledged
        let started = ContinuousClock.now
        var peakResident = residentBytes()
        for _ in 0..<seconds {
            try await Task.sleep(for: .seconds(1))
            peakResident = max(peakResident, residentBytes())
        }
        let elapsed = (ContinuousClock.now - started).seconds
        let cpu = ResourceUsage.now().cpuSeconds - before.cpuSeconds
        let records = agent.ring.statistics().acknowledged - recordsBefore
        let resident = residentBytes()
        let maxResident = ResourceUsage.now().maxResidentBytes

        try await agentGroup.stop()
        try await collector.stop()

        let percent = cpu / elapsed * 100
        return BenchmarkResult(
            name: kinds.isEmpty
                ? "baseline: the same agent without any source + in-process collector, \(seconds) s"
                : "idle agent, \(kinds.count) default sensors at 10 s (\(kinds.map(\.typeName).joined(separator: ", "))) "
                    + "+ in-process collector, \(seconds) s",
            lines: [
                "records acknowledged: \(records) (\(format(Double(records) / elapsed * 10)) per 10 s)",
                "cpu: \(format(cpu * 1000)) ms over \(format(elapsed)) s = \(String(format: 3, percent)) % of one core "
                    + "(agent + collector; target <= 0.05 %)",
                "RSS: \(format(Double(resident) / 1_048_576)) MiB at the end, \(format(Double(peakResident) / 1_048_576)) MiB peak sampled, "
                    + "\(format(Double(maxResident) / 1_048_576)) MiB max (getrusage) (target <= 15 MB)",
            ]
        )
    }
}

extension String {
    /// `value` with `digits` decimals.
    fileprivate init(format digits: Int, _ value: Double) {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (value * scale).rounded() / scale
        self = "\(scaled)"
    }
}
