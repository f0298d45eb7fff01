import UplinkCollector
import UplinkFiles

#if canImport(Glibc)
import Glibc
#endif

/// The log tailer with agent and collector as two `uplink` processes, as they run on a box: a file of 200-byte
/// lines read from the beginning, streamed over loopback HTTP to `uplink collector` (records.jsonl). Reports the CPU
/// of each process apart, per GiB of file, which the in-process `tail` benchmark cannot.
enum TailProcessesBenchmark {
    /// The `uplink` executable built beside this one (`swift build -c release` builds both).
    static func siblingUplink() -> String? {
        guard let me = SymbolicLink.target(of: "/proc/self/exe") else { return nil }
        guard let slash = me.lastIndex(of: "/") else { return nil }
        let path = String(me[..<slash]) + "/uplink"
        return access(path, X_OK) == 0 ? path : nil
    }

    /// `streamBufferBytes`: the agent's `uplink.stream_buffer`, nil for its default. `sinks`: the collector's
    /// `collector.sinks` as YAML (e.g. `[{name: records, type: jsonl}]`), nil for the default configuration
    /// (records.jsonl, no standard output); with sinks the run ends once every sink has forwarded every line.
    static func run(
        uplink: String, mebibytes: Int, lineBytes: Int = 200, streamBufferBytes: Int? = nil, sinks: String? = nil
    ) throws -> BenchmarkResult {
        let directory = try temporaryDirectory(prefix: "uplink-bench-tailproc")
        defer { Directories.removeTree(directory) }
        let logPath = directory + "/app.log"
        let lines = try TailBenchmark.writeLogFile(logPath, mebibytes: mebibytes, lineBytes: lineBytes)
        let port = try freePort()

        try write("collector: { listen: 127.0.0.1:\(port), data_dir: \(directory)/collector, \(sinks.map { "sinks: \($0)" } ?? "stdout: false") }\n",
                  to: directory + "/collector.yaml")
        try write(
            """
            agent: { id: bench, state_dir: \(directory)/state }
            uplink: { url: "http://127.0.0.1:\(port)"\(streamBufferBytes.map { ", stream_buffer: \($0 >> 10)KiB" } ?? "") }
            sources:
              - { name: tail, type: tail, paths: [\(logPath)], start_at: beginning }

            """, to: directory + "/agent.yaml")

        let collector = try spawn(uplink, ["collector", "--config", directory + "/collector.yaml"], log: directory + "/collector.log")
        defer { stop(collector) }
        try waitUntilListening(port: port)
        let collectorBefore = cpuSeconds(of: collector)
        let started = ContinuousClock.now
        let agent = try spawn(uplink, ["run", "--config", directory + "/agent.yaml", "--log-level", "warning"],
                              log: directory + "/agent.log")
        defer { stop(agent) }

        // Done when the collector has stored every line (its own count, from /metrics).
        let deadline = ContinuousClock.now + .seconds(600)
        var stored: UInt64 = 0
        while stored < UInt64(lines) {
            guard ContinuousClock.now < deadline else {
                throw CollectorError(code: "bench", message: "stored \(stored) of \(lines) lines in 10 minutes")
            }
            usleep(20_000)
            stored = storedRecords(port: port) ?? stored
        }
        if let sinks {
            let count = max(1, sinks.ranges(of: "name:").count)
            while (forwardedRecords(port: port) ?? 0) < UInt64(lines) * UInt64(count) {
                guard ContinuousClock.now < deadline else {
                    throw CollectorError(code: "bench", message: "the sinks did not forward \(lines) lines in 10 minutes")
                }
                usleep(20_000)
            }
        }
        let elapsed = ContinuousClock.now - started
        let agentCPU = cpuSeconds(of: agent)
        let collectorCPU = cpuSeconds(of: collector) - collectorBefore

        let fileBytes = Double(lines * (lineBytes + 1))
        let gibibytes = fileBytes / 1_073_741_824
        return BenchmarkResult(
            name: "tail a \(mebibytes) MiB file of \(lineBytes)-byte lines, agent and collector as separate processes"
                + (streamBufferBytes.map { ", stream_buffer \($0 >> 10) KiB" } ?? "") + (sinks.map { ", sinks \($0)" } ?? ""),
            lines: [
                "throughput: \(format(fileBytes / 1_048_576 / elapsed.seconds)) MiB/s of file in \(format(elapsed.seconds)) s",
                "agent: \(format(agentCPU)) cpu-s = \(format(agentCPU / gibibytes)) cpu-s per GiB of file (target <= 3)",
                "collector: \(format(collectorCPU)) cpu-s = \(format(collectorCPU / gibibytes)) cpu-s per GiB of file (target <= 3)",
            ])
    }

    // MARK: - Processes

    private static func spawn(_ path: String, _ arguments: [String], log: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard result == 0 else { throw CollectorError(code: "bench", message: "cannot start \(path): errno \(result)") }
        return pid
    }

    private static func stop(_ pid: pid_t) {
        kill(pid, SIGTERM)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    /// utime + stime of a running process, from /proc/PID/stat (in clock ticks, 10 ms here).
    private static func cpuSeconds(of pid: pid_t) -> Double {
        guard let text = readSmallFile("/proc/\(pid)/stat"), let close = text.lastIndex(of: ")") else { return 0 }
        // Fields after the command name: state is field 3; utime and stime are fields 14 and 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    // MARK: - Loopback

    private static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw CollectorError(code: "bench", message: "socket failed") }
        defer { close(socket) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
            }
        }
        guard bound else { throw CollectorError(code: "bench", message: "cannot bind a loopback port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    private static func connect(port: Int) -> Int32? {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return nil }
        var address = loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        if connected { return socket }
        close(socket)
        return nil
    }

    private static func waitUntilListening(port: Int) throws {
        for _ in 0..<500 {
            if let socket = connect(port: port) {
                close(socket)
                return
            }
            usleep(20_000)
        }
        throw CollectorError(code: "bench", message: "the collector did not listen on 127.0.0.1:\(port) within 10 s")
    }

    /// `uplink_collector_records_stored_total` from the collector's /metrics.
    private static func storedRecords(port: Int) -> UInt64? {
        metric("uplink_collector_records_stored_total", port: port)
    }

    /// `uplink_collector_sink_records_forwarded_total`, summed over the sinks.
    private static func forwardedRecords(port: Int) -> UInt64? {
        metric("uplink_collector_sink_records_forwarded_total", port: port)
    }

    /// The sum of a series' samples on the collector's /metrics, nil when it is not there.
    private static func metric(_ series: String, port: Int) -> UInt64? {
        guard let socket = connect(port: port) else { return nil }
        defer { close(socket) }
        let request = Array("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard Glibc.write(socket, request, request.count) == request.count else { return nil }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(socket, &chunk, chunk.count)
            if count <= 0 { break }
            response += chunk[0..<count]
        }
        let text = String(decoding: response, as: UTF8.self)
        var sum: UInt64?
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") || line.hasPrefix(series + "{") {
            if let value = line.split(separator: " ").last, let number = Double(value) { sum = (sum ?? 0) + UInt64(number) }
        }
        return sum
    }

    // MARK: - Files

    private static func write(_ text: String, to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw CollectorError(code: "bench", message: "cannot create \(path)") }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        guard Glibc.write(descriptor, bytes, bytes.count) == bytes.count else {
            throw CollectorError(code: "bench", message: "short write to \(path)")
        }
    }

    private static func readSmallFile(_ path: String) -> String? {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = read(descriptor, &buffer, buffer.count)
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
    }
}
