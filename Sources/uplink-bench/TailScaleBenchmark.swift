import Logging
import ServiceLifecycle
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkFiles
import UplinkSources
import UplinkTransport

#if canImport(Glibc)
import Glibc
#endif

/// The log tailer following many files: `paths: [<dir>/app.log*]` matches `app.log` and `files - 1` rotated files
/// (`app.log.1`, …, each a few lines long, already read). Agent and collector run in this process over loopback.
///
/// Two phases, each `seconds` long, after 20 s of start-up: idle (nothing written), then a writer appending one
/// line per millisecond to `app.log` (1,000 lines/s). Reports the CPU share of one core (getrusage of the whole
/// process: agent, collector and writer) in each phase, the latency from the append to the collector's receipt
/// (p50/p99/max), the open descriptors and inotify watches of the process, and the bytes written to storage while
/// writing (the checkpoints). Compare `files = 1` with many files.
enum TailScaleBenchmark {
    static func run(files: Int, seconds: Int, logger: Logger) async throws -> BenchmarkResult {
        let directory = try temporaryDirectory(prefix: "uplink-bench-tailscale")
        defer { Directories.removeTree(directory) }
        let logs = directory + "/logs"
        guard mkdir(logs, 0o755) == 0 else { throw CollectorError(code: "bench", message: "mkdir \(logs) failed") }
        // Rotated files of about 600 bytes (longer than the tailer's 256-byte fingerprint), distinct content.
        for index in 1..<max(1, files) {
            var text = ""
            for line in 0..<6 { text += "2026-11-26T00:00:00Z rotated file \(index) line \(line) " + String(repeating: "r", count: 50) + "\n" }
            try writeWhole(logs + "/app.log.\(index)", Array(text.utf8))
        }
        try writeWhole(logs + "/app.log", Array("2026-11-26T00:00:00Z the live file starts here\n".utf8))

        let output = LatencyRecordingOutput()
        let background = try await BackgroundCollector.start(
            configuration: CollectorConfiguration(port: 0, dataDirectory: directory + "/collector", jsonlSink: false),
            logger: logger, stdout: output)

        let baselineDescriptors = openDescriptors()
        var tail = TailConfig()
        tail.paths = [logs + "/app.log*"]
        tail.startAt = .end
        let agent = Agent(
            configuration: AgentConfiguration(
                uplink: UplinkConfiguration(url: background.url, agentID: "bench"),
                sources: [.init(name: "tail", config: SourceConfig(tail))],
                stateDirectory: directory + "/state"),
            logger: logger)
        let group = BackgroundServices(agent.serviceConfigurations, logger: logger)
        while agent.uplink.statistics().streamsOpened == 0 { try await Task.sleep(for: .milliseconds(5)) }
        // Start-up: discovery of every file, the first checkpoints, rotated files read to their end and (new tailer)
        // closed after 5 s of quiet. With 10,000 files that takes until about 15 s (task-clock in 5 s windows:
        // 1,581, 197, 35, 3.6, 1.9 ms): a shorter wait would count its tail as idle.
        try await Task.sleep(for: .seconds(20))

        // Idle.
        let idleDescriptors = openDescriptors()
        let idleWatches = inotifyWatches()
        let idleBefore = ResourceUsage.now()
        var started = ContinuousClock.now
        try await Task.sleep(for: .seconds(seconds))
        let idleCPU = (ResourceUsage.now().cpuSeconds - idleBefore.cpuSeconds) / (ContinuousClock.now - started).seconds
        let idleEndDescriptors = openDescriptors()

        // 1,000 lines/s to app.log, each carrying its append time for the collector's side.
        let descriptor = open(logs + "/app.log", O_WRONLY | O_APPEND | O_CLOEXEC)
        guard descriptor >= 0 else { throw CollectorError(code: "bench", message: "cannot open app.log") }
        defer { close(descriptor) }
        let lines = seconds * 1000
        let loadBefore = ResourceUsage.now()
        let writtenBefore = storageWriteBytes()
        started = ContinuousClock.now
        var loadDescriptors = 0
        var appended = 0
        for index in 0..<lines {
            try await Task.sleep(until: started + .milliseconds(index), clock: .continuous)
            let text = Array("lat \(WallClock.nowNanoseconds()) line \(index) \(String(repeating: "x", count: 120))\n".utf8)
            let written = text.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written == text.count else { throw CollectorError(code: "bench", message: "short write") }
            appended += written
            if index == lines / 2 { loadDescriptors = openDescriptors() }
        }
        var waits = 0
        while output.count < lines, waits < 5_000 {
            try await Task.sleep(for: .milliseconds(2))
            waits += 1
        }
        let loadCPU = (ResourceUsage.now().cpuSeconds - loadBefore.cpuSeconds) / (ContinuousClock.now - started).seconds
        let loadSeconds = (ContinuousClock.now - started).seconds
        let written = storageWriteBytes() - writtenBefore
        let resident = residentBytes()
        try await group.stop()
        try await background.stop()

        let latencies = output.latenciesMicroseconds.sorted()
        return BenchmarkResult(
            name: "tail \(files) matched file\(files == 1 ? "" : "s") (paths: [app.log*]), idle \(seconds) s, then 1,000 lines/s to app.log for \(seconds) s",
            lines: [
                "cpu idle: \(format(idleCPU * 100)) % of one core; at 1,000 lines/s: \(format(loadCPU * 100)) % (agent + collector + writer)",
                "latency append → collector: p50 \(format(percentile(latencies, 50) / 1000)) ms, p99 \(format(percentile(latencies, 99) / 1000)) ms, "
                    + "max \(format((latencies.last ?? .nan) / 1000)) ms (\(latencies.count) of \(lines) lines arrived)",
                "open descriptors of the process: \(baselineDescriptors) before the agent, \(idleDescriptors) idle "
                    + "(\(idleEndDescriptors) at its end), \(loadDescriptors) writing; inotify watches idle: \(idleWatches)",
                "RSS at the end: \(format(Double(resident) / 1_048_576)) MiB",
                "storage writes while writing (/proc/self/io write_bytes: the writer's \(format(Double(appended) / 1024)) KiB to "
                    + "app.log and the tailer's checkpoints; the collector prints to stdout): \(format(Double(written) / 1024)) KiB, "
                    + "\(format(Double(written - appended) / loadSeconds * 3600 / 1_048_576)) MiB per hour more than the appended bytes (appends are accounted by page: compare with 1 file)",
            ])
    }

    private static func writeWhole(_ path: String, _ bytes: [UInt8]) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw CollectorError(code: "bench", message: "cannot create \(path)") }
        defer { close(descriptor) }
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw CollectorError(code: "bench", message: "short write to \(path)") }
    }

    /// Entries of /proc/self/fd.
    static func openDescriptors() -> Int {
        guard let names = try? Directories.list("/proc/self/fd") else { return -1 }
        return names.count - 1  // the listing's own descriptor
    }

    /// inotify watches of this process: `inotify wd:` lines in /proc/self/fdinfo/*.
    static func inotifyWatches() -> Int {
        guard let names = try? Directories.list("/proc/self/fd") else { return -1 }
        var watches = 0
        for name in names {
            guard let target = SymbolicLink.target(of: "/proc/self/fd/" + name), target.contains("inotify"),
                let file = fopen("/proc/self/fdinfo/" + name, "r")
            else { continue }
            var line = [CChar](repeating: 0, count: 512)
            while fgets(&line, Int32(line.count), file) != nil {
                if String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).hasPrefix("inotify wd:") {
                    watches += 1
                }
            }
            fclose(file)
        }
        return watches
    }
}
