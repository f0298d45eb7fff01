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

/// The log tailer end to end: a file of 200-byte lines read from the beginning, streamed over loopback HTTP to a
/// collector in this process that stores records.jsonl.
enum TailBenchmark {
    static func run(
        mebibytes: Int, lineBytes: Int = 200, streamBufferBytes: Int = BoundStreamPair.defaultCapacity, logger: Logger
    ) async throws -> BenchmarkResult {
        let directory = try temporaryDirectory(prefix: "uplink-bench-tail")
        defer { removeTree(directory) }
        let logPath = directory + "/app.log"
        let lines = try writeLogFile(logPath, mebibytes: mebibytes, lineBytes: lineBytes)

        let background = try await BackgroundCollector.start(
            configuration: CollectorConfiguration(port: 0, dataDirectory: directory + "/collector", stdoutSink: false),
            logger: logger)
        let collector = background.collector

        var tail = TailConfig()
        tail.paths = [logPath]
        tail.startAt = .beginning
        let agent = Agent(
            configuration: AgentConfiguration(
                uplink: UplinkConfiguration(url: background.url, agentID: "bench", streamBufferBytes: streamBufferBytes),
                sources: [.init(name: "tail", config: SourceConfig(tail))],
                stateDirectory: directory + "/state"),
            logger: logger)
        let usage = ResourceUsage.now()
        let started = ContinuousClock.now
        let group = BackgroundServices(agent.serviceConfigurations, logger: logger)
        var fillSamples: [Int] = []
        var polls = 0
        while collector.statistics().recordsStored < UInt64(lines) {
            try await Task.sleep(for: .milliseconds(2))
            polls += 1
            if polls % 50 == 0 { fillSamples.append(agent.ring.statistics().usedBytes) }
        }
        let elapsed = ContinuousClock.now - started
        let cpu = ResourceUsage.now().cpuSeconds - usage.cpuSeconds
        let uplinkStatistics = agent.uplink.statistics()
        let peakResident = ResourceUsage.now().maxResidentBytes
        try await group.stop()
        try await background.stop()
        precondition(collector.statistics().recordsStored == UInt64(lines), "collector stored \(collector.statistics().recordsStored)")

        let fileBytes = Double(lines * (lineBytes + 1))
        let gibibytes = fileBytes / 1_073_741_824
        return BenchmarkResult(
            name: "tail a \(mebibytes) MiB file of \(lineBytes)-byte lines from the beginning → collector (records.jsonl), "
                + "\(streamBufferBytes / 1024) KiB stream buffer",
            lines: [
                "lines: \(lines), file bytes: \(Int(fileBytes)), record line bytes: \(uplinkStatistics.lineBytesWritten), "
                    + "wire bytes: \(uplinkStatistics.bytesWritten) (compression \(uplinkStatistics.compression), the default)",
                "throughput: \(format(fileBytes / 1_048_576 / elapsed.seconds)) MiB/s of file, "
                    + "\(format(Double(lines) / elapsed.seconds / 1000)) k lines/s in \(format(elapsed.seconds)) s (target >= 150 MiB/s)",
                "cpu: \(format(cpu)) s for agent + collector = \(format(cpu / gibibytes)) cpu-s per GiB of file",
                "peak RSS of the process: \(peakResident / 1_048_576) MiB",
                "ring fill while running (sampled every 100 ms): median \(median(fillSamples) / 1_048_576) MiB of \(agent.ring.capacity / 1_048_576) MiB",
            ])
    }

    private static func median(_ values: [Int]) -> Int {
        values.isEmpty ? 0 : values.sorted()[values.count / 2]
    }

    /// Writes `mebibytes` MiB of numbered lines, each `lineBytes` long plus its newline. Returns the line count.
    static func writeLogFile(_ path: String, mebibytes: Int, lineBytes: Int) throws -> Int {
        let lines = mebibytes * 1_048_576 / (lineBytes + 1)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw CollectorError(code: "bench", message: "cannot create \(path)") }
        defer { close(descriptor) }
        var chunk: [UInt8] = []
        chunk.reserveCapacity(1 << 20)
        let filler = [UInt8](repeating: UInt8(ascii: "x"), count: lineBytes)
        for index in 0..<lines {
            var line = Array("2026-11-21T08:00:00Z INFO request \(index) ".utf8)
            line += filler[0..<(lineBytes - min(lineBytes, line.count))]
            chunk += line.prefix(lineBytes)
            chunk.append(UInt8(ascii: "\n"))
            if chunk.count >= (1 << 20) - lineBytes - 1 || index == lines - 1 {
                let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                guard written == chunk.count else { throw CollectorError(code: "bench", message: "short write to \(path)") }
                chunk.removeAll(keepingCapacity: true)
            }
        }
        return lines
    }

    private static func removeTree(_ path: String) {
        // Only what this benchmark created.
        for name in ["app.log", "collector/records.jsonl", "collector/marks.log", "collector/rejects.jsonl", "collector/marks.log.tmp"] {
            unlink(path + "/" + name)
        }
        unlink(path + "/state/tail/tail.checkpoints")
        for name in ["collector", "state/tail"] { rmdir(path + "/" + name) }
        rmdir(path + "/state")
        rmdir(path)
    }
}
