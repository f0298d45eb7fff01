import Logging
import Synchronization
import ServiceLifecycle
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkFiles
import UplinkSources
import UplinkTransport
import UplinkWire

#if canImport(Glibc)
import Glibc
#endif

/// Agent and collector in this process, talking HTTP over loopback.
enum EndToEndBenchmark {
    /// A generator producing as fast as the pipeline takes records; the collector stores them in records.jsonl.
    /// With `tls`, the collector listens with TLS (ALPN offers h2 and http/1.1) and the agent trusts its CA.
    static func throughput(
        records: Int, recordBytes: Int, streamBufferBytes: Int = BoundStreamPair.defaultCapacity,
        compression: WireCompression = .none, tls: TLSBenchmark.Files? = nil, logger: Logger
    ) async throws -> BenchmarkResult {
        let directory = try temporaryDirectory()
        defer { Directories.removeTree(directory) }
        let collectorConfiguration = CollectorConfiguration(
            port: 0, dataDirectory: directory, stdoutSink: false,
            tls: tls.map { CollectorTLS(certificateFile: $0.certificateFile, keyFile: $0.keyFile) })
        let background = try await BackgroundCollector.start(configuration: collectorConfiguration, logger: logger)
        let collector = background.collector

        let agent = Agent(
            configuration: AgentConfiguration(
                uplink: UplinkConfiguration(
                    url: tls == nil ? background.url : "https://127.0.0.1:\(background.port)", agentID: "bench",
                    streamBufferBytes: streamBufferBytes, compression: compression, tls: UplinkTLS(caFile: tls?.caFile)),
                sources: [.init(name: "gen", config: SourceConfig(GeneratorConfig(rate: 0, recordBytes: recordBytes, count: records)))]
            ),
            logger: logger
        )
        let usage = ResourceUsage.now()
        let started = ContinuousClock.now
        let agentGroup = BackgroundServices(agent.serviceConfigurations, logger: logger)
        try await waitForAcknowledgements(of: records, agent: agent)
        let elapsed = ContinuousClock.now - started
        let cpu = ResourceUsage.now().cpuSeconds - usage.cpuSeconds
        let uplinkStatistics = agent.uplink.statistics()
        // Throughput and CPU per GiB of record lines as the agent writes them (before compression), so runs with
        // and without compression compare; the wire bytes are shown beside them.
        let bytes = uplinkStatistics.lineBytesWritten
        let wireBytes = uplinkStatistics.bytesWritten
        let peakResident = ResourceUsage.now().maxResidentBytes
        try await agentGroup.stop()
        try await background.stop()
        precondition(collector.statistics().recordsStored == UInt64(records), "collector stored \(collector.statistics().recordsStored)")

        let lineBytesPerRecord = format(Double(bytes) / Double(records))
        let wireBytesPerRecord = format(Double(wireBytes) / Double(records))
        let recordsLine = "records: \(records), line bytes: \(bytes) (\(lineBytesPerRecord) bytes/line), wire bytes: "
            + "\(wireBytes) (\(wireBytesPerRecord) bytes/line; the generator's messages repeat one letter, so compression "
            + "here is a best case)"
        let mebibytes = Double(bytes) / 1_048_576
        let gibibytes = Double(bytes) / 1_073_741_824
        return BenchmarkResult(
            name: "end to end on loopback\(tls == nil ? "" : " over TLS"), generator → collector (records.jsonl), "
                + "\(recordBytes)-byte messages, \(streamBufferBytes / 1024) KiB stream buffer, compression \(compression)",
            lines: [
                recordsLine,
                "throughput: \(format(mebibytes / elapsed.seconds)) MiB/s of record lines, "
                    + "\(format(Double(records) * Double(recordBytes) / 1_048_576 / elapsed.seconds)) MiB/s of messages, "
                    + "\(format(Double(records) / elapsed.seconds / 1000)) k records/s (target >= 200 MiB/s)",
                "cpu: \(format(cpu)) s for agent + collector = \(format(cpu / gibibytes)) cpu-s per GiB of record lines",
                "peak RSS of the process: \(peakResident / 1_048_576) MiB (ring capacity 64 MiB, allocated once)",
                "uplink: \(uplinkStatistics.writePasses) write passes (\(bytes / max(1, uplinkStatistics.writePasses)) line bytes each), "
                    + "\(uplinkStatistics.spaceAvailableEvents) space events, \(uplinkStatistics.dataAvailableEvents) data wake-ups",
            ]
        )
    }

    /// One record per millisecond; the latency is the time from the append to the moment the collector's stdout sink
    /// receives the record (before it acknowledges).
    static func latency(records: Int, logger: Logger) async throws -> BenchmarkResult {
        let directory = try temporaryDirectory()
        defer { Directories.removeTree(directory) }
        let output = LatencyRecordingOutput()
        let background = try await BackgroundCollector.start(
            configuration: CollectorConfiguration(port: 0, dataDirectory: directory, jsonlSink: false), logger: logger,
            stdout: output)

        let agent = Agent(
            configuration: AgentConfiguration(
                uplink: UplinkConfiguration(url: background.url, agentID: "bench"), sources: []),
            logger: logger
        )
        let agentGroup = BackgroundServices(agent.serviceConfigurations, logger: logger)
        while agent.uplink.statistics().streamsOpened == 0 { try await Task.sleep(for: .milliseconds(5)) }

        let sink = RingRecordSink(ring: agent.ring, sourceName: "latency", encoder: NDJSONFrameEncoder())
        let start = ContinuousClock.now
        for index in 0..<records {
            try await Task.sleep(until: start + .milliseconds(index), clock: .continuous)
            let now = WallClock.nowNanoseconds()
            sink.emit(.log("lat \(now)", source: "latency", timestamp: now))
        }
        while output.count < records { try await Task.sleep(for: .milliseconds(5)) }
        try await agentGroup.stop()
        try await background.stop()

        let latencies = output.latenciesMicroseconds.sorted()
        return BenchmarkResult(
            name: "latency append → collector receipt at 1,000 records/s",
            lines: [
                "records: \(latencies.count)",
                "p50: \(format(percentile(latencies, 50) / 1000)) ms, p90: \(format(percentile(latencies, 90) / 1000)) ms, "
                    + "p99: \(format(percentile(latencies, 99) / 1000)) ms (target <= 2), max: \(format(latencies.last! / 1000)) ms",
            ]
        )
    }
}

/// Reads the "lat <append ns>" messages the collector prints and records how long each took to arrive.
final class LatencyRecordingOutput: CollectorOutput {
    private let latencies = Mutex<[Double]>([])

    var count: Int { latencies.withLock { $0.count } }
    var latenciesMicroseconds: [Double] { latencies.withLock { $0 } }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        let received = WallClock.nowNanoseconds()
        var found: [Double] = []
        let marker = Array("lat ".utf8)
        var index = 0
        while index + marker.count <= bytes.count {
            if bytes[index] == marker[0] && Array(bytes[index..<(index + marker.count)]) == marker {
                index += marker.count
                var value: Int64 = 0
                while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                    value = value * 10 + Int64(bytes[index] - 48)
                    index += 1
                }
                found.append(Double(received - value) / 1000)
            } else {
                index += 1
            }
        }
        latencies.withLock { $0.append(contentsOf: found) }
    }
}

extension EndToEndBenchmark {
    /// How long the benchmark waits without a single new acknowledgement before it gives up.
    static let stallLimit: Duration = .seconds(30)

    /// Waits until the collector has acknowledged `records` records. Fails, naming the uplink's last failure, when
    /// nothing is acknowledged for `stallLimit` (a benchmark that cannot connect must not wait forever).
    static func waitForAcknowledgements(of records: Int, agent: Agent) async throws {
        var acknowledged = agent.ring.statistics().acknowledged
        var lastProgress = ContinuousClock.now
        while acknowledged < UInt64(records) {
            try await Task.sleep(for: .milliseconds(2))
            let now = agent.ring.statistics().acknowledged
            if now != acknowledged {
                acknowledged = now
                lastProgress = .now
            } else if ContinuousClock.now - lastProgress > stallLimit {
                let failure = agent.uplink.statistics().lastFailure.map { "\($0)" } ?? "none"
                throw CollectorError(
                    code: "bench",
                    message: "no acknowledgement for \(stallLimit) at \(acknowledged) of \(records) records "
                        + "(the uplink's last failure: \(failure); UPLINK_BENCH_DEBUG=1 logs everything)")
            }
        }
    }
}
