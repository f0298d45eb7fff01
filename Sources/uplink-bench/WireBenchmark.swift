import Logging
import NIOCore
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

/// `uplink-bench wire`: bytes on the wire per record for `uplink.compression` none, gzip and zstd, and what
/// compressing costs.
///
/// - Metrics, live: three agents (one per encoding) sample the real cpu, memory, load, network, diskio and disk
///   sensors of this machine every second for `seconds`, each streaming to one in-process collector; the wire bytes
///   are what each uplink handed to its HTTP body (`UplinkStatistics.bytesWritten`), so every write pass's flush and
///   every heartbeat is in them.
/// - Access-log lines, offline: generated combined-log lines of about 240 bytes (varied addresses, paths, statuses,
///   sizes, referrers and user agents) as record lines, compressed in write passes of 1, 10, 100 and 1000 lines (a
///   flush each, as the uplink does), and in 256 KiB fills for the CPU per MiB of line bytes (thread CPU time of the
///   compress calls alone).
enum WireBenchmark {
    static let encodings: [WireCompression] = [.none, .gzip, .zstd]

    static func metrics(seconds: Int, logger: Logger) async throws -> BenchmarkResult {
        let directory = try temporaryDirectory(prefix: "uplink-bench-wire")
        defer { Directories.removeTree(directory) }
        let background = try await BackgroundCollector.start(
            configuration: CollectorConfiguration(port: 0, dataDirectory: directory, stdoutSink: false), logger: logger)
        let second = Duration.seconds(1)
        let sources: [AgentConfiguration.NamedSource] = [
            .init(name: "cpu", config: SourceConfig(CPUConfig(interval: second))),
            .init(name: "memory", config: SourceConfig(MemoryConfig(interval: second))),
            .init(name: "load", config: SourceConfig(LoadConfig(interval: second))),
            .init(name: "network", config: SourceConfig(NetworkConfig(interval: second))),
            .init(name: "diskio", config: SourceConfig(DiskIOConfig(interval: second))),
            .init(name: "disk", config: SourceConfig(DiskConfig(interval: second))),
        ]
        var agents: [(WireCompression, Agent, BackgroundServices)] = []
        for encoding in encodings {
            let agent = Agent(
                configuration: AgentConfiguration(
                    uplink: UplinkConfiguration(url: background.url, agentID: "wire-\(encoding)", compression: encoding),
                    sources: sources),
                logger: logger)
            agents.append((encoding, agent, BackgroundServices(agent.serviceConfigurations, logger: logger)))
        }
        try await Task.sleep(for: .seconds(seconds))
        var lines = ["\(seconds) s of this machine's cpu, memory, load, network, diskio and disk sensors at 1 s, one agent per encoding"]
        for (encoding, agent, group) in agents {
            try await group.stop()
            let statistics = agent.uplink.statistics()
            let records = max(statistics.recordsWritten, 1)
            lines.append(
                "\(pad(encoding.rawValue, 5)) \(records) samples, \(statistics.writePasses) write passes: "
                    + "\(format(Double(statistics.bytesWritten) / Double(records))) wire bytes/sample "
                    + "(lines \(format(Double(statistics.lineBytesWritten) / Double(records))) bytes/sample, "
                    + "ratio \(format(Double(statistics.lineBytesWritten) / Double(max(statistics.bytesWritten, 1)))))")
        }
        try await background.stop()
        return BenchmarkResult(name: "wire: metric samples", lines: lines)
    }

    /// `count` record lines of generated access-log lines (about 240 bytes of message each).
    static func accessLogLines(count: Int) -> [ByteBuffer] {
        var random = SplitMix64(seed: 16)
        func pick<T>(_ values: [T]) -> T { values[Int(random.next() % UInt64(values.count))] }
        let methods = ["GET", "GET", "GET", "GET", "POST", "PUT", "DELETE", "HEAD"]
        let paths = [
            "/", "/index.html", "/api/v1/items", "/api/v1/items/%d", "/api/v1/users/%d/orders", "/static/js/app.%x.js",
            "/static/css/site.%x.css", "/images/products/%d.jpg", "/search?q=item%d&page=%d", "/login", "/healthz",
            "/api/v2/metrics/%d?window=5m",
        ]
        let statuses = [200, 200, 200, 200, 200, 200, 304, 301, 404, 500, 201, 204]
        let agents = [
            "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Safari/605.1.15",
            "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
            "Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
            "curl/8.4.0", "Go-http-client/1.1", "python-requests/2.31.0", "Prometheus/2.48.0",
        ]
        let referrers = ["-", "-", "https://www.example.com/", "https://shop.example.com/cart", "https://www.google.com/"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        var timestamp: Int64 = 1_763_704_818_000_000_000
        var result: [ByteBuffer] = []
        result.reserveCapacity(count)
        let encoder = NDJSONFrameEncoder()
        for sequence in 1...UInt64(count) {
            timestamp += Int64(random.next() % 20_000_000)
            let seconds = timestamp / 1_000_000_000
            let ip = "\(pick([10, 172, 192, 203, 198, 81, 93])).\(random.next() % 256).\(random.next() % 256).\(random.next() % 254 + 1)"
            var path = pick(paths)
            while let range = path.firstRange(of: "%d") { path.replaceSubrange(range, with: String(random.next() % 100_000)) }
            while let range = path.firstRange(of: "%x") { path.replaceSubrange(range, with: String(random.next() % 0xFFFFFF, radix: 16)) }
            let time = "\(10 + seconds % 18)/\(months[Int(seconds / 86_400 % 12)])/2026:\(pad2(seconds / 3600 % 24)):\(pad2(seconds / 60 % 60)):\(pad2(seconds % 60)) +0000"
            let line = "\(ip) - - [\(time)] \"\(pick(methods)) \(path) HTTP/1.1\" \(pick(statuses)) \(random.next() % 60_000) "
                + "\"\(pick(referrers))\" \"\(pick(agents))\""
            var frame: [UInt8] = []
            encoder.encodeFrame(.log(line, source: "nginx", timestamp: timestamp), into: &frame)
            var buffer = ByteBufferAllocator().buffer(capacity: frame.count + 32)
            _ = frame.withUnsafeBytes { WireLineWriter.appendRecordLine(sequence: sequence, frame: $0, to: &buffer) }
            result.append(buffer)
        }
        return result
    }

    static func accessLogs(count: Int) throws -> BenchmarkResult {
        let lines = accessLogLines(count: count)
        let lineBytes = lines.reduce(0) { $0 + $1.readableBytes }
        var report = ["\(count) generated access-log lines, \(format(Double(lineBytes) / Double(count))) bytes per record line"]
        for linesPerPass in [1, 10, 100, 1000] {
            var row = "\(pad(String(linesPerPass), 4)) lines/pass:"
            for encoding in encodings {
                let bytes = try compressedBytes(lines, encoding: encoding, linesPerPass: linesPerPass)
                row += " \(encoding) \(format(Double(bytes) / Double(count))) B/line"
            }
            report.append(row)
        }
        // CPU: 256 KiB fills (the uplink's default 64 KiB pair × its fill factor of 4), flushed each.
        var all = ByteBufferAllocator().buffer(capacity: lineBytes)
        for line in lines { all.writeImmutableBuffer(line) }
        for encoding in encodings where encoding != .none {
            let compressor = try StreamCompressor(encoding)
            var output = ByteBufferAllocator().buffer(capacity: lineBytes / 4)
            let fill = 256 << 10
            let start = threadCPUSeconds()
            var offset = all.readerIndex
            while offset < all.writerIndex {
                let length = min(fill, all.writerIndex - offset)
                try compressor.compress(all.getSlice(at: offset, length: length)!, flush: true, into: &output)
                offset += length
            }
            let cpu = threadCPUSeconds() - start
            let mebibytes = Double(lineBytes) / Double(1 << 20)
            report.append(
                "\(pad(encoding.rawValue, 5)) compressing 256 KiB fills: \(format(cpu / mebibytes * 1000)) CPU-ms per MiB of lines "
                    + "(\(format(mebibytes / cpu)) MiB/s on one core), \(format(Double(output.readableBytes) / Double(count))) B/line")
        }
        return BenchmarkResult(name: "wire: access-log lines", lines: report)
    }

    /// Wire bytes of `lines` sent in passes of `linesPerPass`, each compressed and flushed (as is, for `.none`).
    static func compressedBytes(_ lines: [ByteBuffer], encoding: WireCompression, linesPerPass: Int) throws -> Int {
        guard encoding != .none else { return lines.reduce(0) { $0 + $1.readableBytes } }
        let compressor = try StreamCompressor(encoding)
        var total = 0
        var index = 0
        while index < lines.count {
            var pass = ByteBuffer()
            for line in lines[index..<min(index + linesPerPass, lines.count)] { pass.writeImmutableBuffer(line) }
            index += linesPerPass
            var output = ByteBuffer()
            try compressor.compress(pass, flush: true, into: &output)
            total += output.readableBytes
        }
        return total
    }

    private static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    private static func pad2(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
