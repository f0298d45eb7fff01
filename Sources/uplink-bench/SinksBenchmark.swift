import AsyncHTTPClient
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkFiles
import UplinkTransport
import UplinkWire

#if canImport(Glibc)
import Glibc
#endif

/// The collector's sinks against real stores (`deploy/bench-sinks.sh` starts VictoriaMetrics and ClickHouse and
/// passes their URLs): forwarding throughput and its CPU, and the lag from an agent's append to a record being
/// queryable in the store.
enum SinksBenchmark {
    /// A store the benchmark forwards to.
    struct Store: Sendable {
        /// The stores the benchmark knows.
        enum Kind: String, Sendable { case victoriametrics, clickhouse }

        let kind: Kind
        let url: String
        let password: String?

        var name: String { kind == .victoriametrics ? "VictoriaMetrics" : "ClickHouse" }

        /// `compression` nil: the kind's default.
        func sink(name: String, url: String? = nil, linger: Duration, compression: SinkCompression? = nil) -> SinkConfiguration {
            let backoff = Backoff(initial: .milliseconds(50), multiplier: 2, maximum: .seconds(1))
            let url = url ?? self.url
            switch kind {
            case .victoriametrics:
                let settings = VictoriaMetricsSinkConfig(url: url, compression: compression ?? VictoriaMetricsSinkConfig.defaultCompression)
                return SinkConfiguration(name: name, kind: settings, batchLinger: linger, backoff: backoff)
            case .clickhouse:
                let settings = ClickHouseSinkConfig(
                    url: url, compression: compression ?? ClickHouseSinkConfig.defaultCompression, password: password)
                return SinkConfiguration(name: name, kind: settings, batchLinger: linger, backoff: backoff)
            }
        }

        /// `compression`'s default for the kind.
        var defaultCompression: SinkCompression {
            kind == .victoriametrics ? VictoriaMetricsSinkConfig.defaultCompression : ClickHouseSinkConfig.defaultCompression
        }
    }

    /// Forwarding throughput: an agent fills the collector's log with `records` while the sink's store is
    /// unreachable; then the collector restarts with the store reachable and the time and CPU (this process: the
    /// collector alone, no agent running) until the sink's cursor reaches the end of the log are measured.
    static func throughput(store: Store, records: Int, compression: SinkCompression? = nil, logger: Logger) async throws -> BenchmarkResult {
        let directory = try temporaryDirectory()
        defer { Directories.removeTree(directory) }
        let run = "t\(WallClock.nowNanoseconds() % 1_000_000_007)"
        // Port 1 refuses connections: the forwarder keeps its cursor at the start of the log.
        let unreachable = store.sink(name: "bench", url: "http://127.0.0.1:1", linger: .seconds(1))
        let filling = try await startCollector(directory, sinks: [unreachable], logger: logger)
        let base = WallClock.nowNanoseconds()
        try await produce(
            records: records, to: filling.url, agent: run, logger: logger, pacing: nil,
            record: { index, _ in record(store.kind, index: index, timestamp: base + Int64(index) * 1_000_000, run: run) })
        try await filling.stop()

        let usage = ResourceUsage.now()
        let started = ContinuousClock.now
        let sink = store.sink(name: "bench", linger: .milliseconds(100), compression: compression)
        let forwarding = try await startCollector(directory, sinks: [sink], logger: logger)
        while (forwarding.collector.sinkStatistics().first?.recordsForwarded ?? 0) < UInt64(records) {
            try await Task.sleep(for: .milliseconds(5))
        }
        let elapsed = ContinuousClock.now - started
        let cpu = ResourceUsage.now().cpuSeconds - usage.cpuSeconds
        let statistics = forwarding.collector.sinkStatistics()[0]
        try await forwarding.stop()
        let effective = compression ?? store.defaultCompression
        return BenchmarkResult(
            name: "sink \(store.kind.rawValue) (\(store.name) at \(store.url)), compression \(effective.rawValue): forwarding a log of "
                + "\(records) \(store.kind == .victoriametrics ? "metric samples" : "200-byte log lines") after a restart",
            lines: [
                "forwarded \(statistics.recordsForwarded) records in \(statistics.batchesForwarded) batches (batch_max_bytes 1 MiB), "
                    + "\(statistics.retries) retries, in \(format(elapsed.seconds)) s = \(Int(Double(records) / elapsed.seconds)) records/s",
                "collector cpu (recovery scan, reading the log, encoding, HTTP): \(format(cpu)) s = "
                    + "\(format(cpu / (Double(records) / 1_000_000))) cpu-s per million records",
            ])
    }

    /// Lag at a steady `rate`: an agent appends records (each carries its index) for `seconds`; a poller asks the
    /// store every 10 ms for the highest index it can query. A record's lag is the time from its append to the end
    /// of the first poll that saw it. With `batch_linger` at `linger`.
    static func lag(store: Store, rate: Int, seconds: Int, linger: Duration, logger: Logger) async throws -> BenchmarkResult {
        let directory = try temporaryDirectory()
        defer { Directories.removeTree(directory) }
        let run = "l\(WallClock.nowNanoseconds() % 1_000_000_007)"
        let collector = try await startCollector(directory, sinks: [store.sink(name: "lag", linger: linger)], logger: logger)
        let records = rate * seconds
        let appended = AppendTimes(count: records)
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        let poller = Task { () -> [(index: Int, at: ContinuousClock.Instant)] in
            var seen: [(index: Int, at: ContinuousClock.Instant)] = []
            var highest = -1
            while highest < records - 1, !Task.isCancelled {
                if let newest = try? await queryHighest(store, run: run, client: client), newest > highest {
                    highest = newest
                    seen.append((newest, .now))
                }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return seen
        }
        try await produce(
            records: records, to: collector.url, agent: run, logger: logger, pacing: .seconds(1) / rate,
            record: { index, now in
                appended.set(index, now)
                return record(store.kind, index: index, timestamp: WallClock.nowNanoseconds(), run: run)
            })
        let deadline = ContinuousClock.now + .seconds(60)
        while !poller.isCancelled, ContinuousClock.now < deadline {
            if (collector.collector.sinkStatistics().first?.recordsForwarded ?? 0) >= UInt64(records) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        let pollerDeadline = Task {
            try? await Task.sleep(for: .seconds(30))
            poller.cancel()
        }
        let seen = await poller.value
        pollerDeadline.cancel()
        try await client.shutdown()
        try await collector.stop()

        var lags: [Double] = []
        var next = 0
        for (highest, at) in seen {
            while next <= highest && next < records {
                lags.append((at - appended.get(next)).seconds * 1000)
                next += 1
            }
        }
        lags.sort()
        return BenchmarkResult(
            name: "sink \(store.kind.rawValue) (\(store.name)): lag from append to queryable at \(rate) records/s for \(seconds) s, "
                + "batch_linger \(linger), store polled every 10 ms",
            lines: [
                "queryable: \(lags.count) of \(records) records",
                "lag p50 \(format(percentile(lags, 50))) ms, p90 \(format(percentile(lags, 90))) ms, p99 \(format(percentile(lags, 99))) ms, "
                    + "max \(format(lags.last ?? .nan)) ms",
            ])
    }

    /// Record `index` of a run: a metric sample whose value is the index, or a log line that starts with it.
    private static func record(_ kind: Store.Kind, index: Int, timestamp: Int64, run: String) -> Record {
        switch kind {
        case .victoriametrics:
            // 100 series, so that VictoriaMetrics sees a realistic number of label sets.
            return Record(
                timestamp: timestamp, source: "bench",
                payload: .metric(Metric(name: "bench.value", value: Double(index), unit: "", tags: [Tag("run", run), Tag("series", String(index % 100))])))
        case .clickhouse:
            var message = "\(index) " + run + " "
            message += String(repeating: "x", count: max(0, 200 - message.utf8.count))
            return Record(timestamp: timestamp, source: "bench", payload: .log(LogLine(message: message)))
        }
    }

    /// The highest record index of `run` the store answers a query with, or nil.
    private static func queryHighest(_ store: Store, run: String, client: HTTPClient) async throws -> Int? {
        let url: String
        var request: HTTPClientRequest
        switch store.kind {
        case .victoriametrics:
            url = store.url + "/api/v1/query?query=" + percentEncoded("max(max_over_time(bench_value{run=\"\(run)\"}[1h]))")
            request = HTTPClientRequest(url: url)
        default:
            // seq is 1-based, the index 0-based.
            url = store.url + "/?query=" + percentEncoded("SELECT max(seq) - 1 FROM default.uplink_logs WHERE agent = '\(run)' FORMAT TabSeparated")
            request = HTTPClientRequest(url: url)
            if let password = store.password {
                request.headers.add(name: "Authorization", value: "Basic " + Base64.encode(Array("default:\(password)".utf8)))
            }
        }
        let response = try await client.execute(request, timeout: .seconds(5))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { return nil }
        let text = String(buffer: body)
        switch store.kind {
        case .victoriametrics:
            // {"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000,"123"]}]}}
            let parts = text.split(separator: "\"value\":[", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, let close = parts[1].firstIndex(of: "]") else { return nil }
            let pair = parts[1][..<close].split(separator: ",")
            guard pair.count == 2 else { return nil }
            return Double(pair[1].filter { $0 != "\"" }).map { Int($0) }
        default:
            let value = Int(text.split(separator: "\n").first.map(String.init) ?? "")
            // An empty table answers max() - 1 as a huge unsigned number.
            return value.flatMap { $0 >= 0 && $0 < 1 << 40 ? $0 : nil }
        }
    }

    /// An in-process agent (no sources) appending `records` frames, every `pacing` or as fast as the collector
    /// acknowledges (a quarter of the ring at most outstanding); returns once all are acknowledged.
    private static func produce(
        records: Int, to url: String, agent: String, logger: Logger, pacing: Duration?,
        record: @escaping @Sendable (Int, ContinuousClock.Instant) -> Record
    ) async throws {
        let configuration = AgentConfiguration(
            uplink: UplinkConfiguration(url: url, agentID: agent, streamBufferBytes: 256 << 10), sources: [])
        let agentInstance = try Agent.open(configuration: configuration, logger: logger)
        let group = BackgroundServices(agentInstance.serviceConfigurations, logger: logger)
        let ring = agentInstance.ring
        let producer = Task.detached {
            let source = ring.registerSource("bench")
            let encoder = NDJSONFrameEncoder()
            let start = ContinuousClock.now
            for index in 0..<records {
                if let pacing {
                    let due = start + pacing * index
                    if due > .now { try? await Task.sleep(until: due, clock: .continuous) }
                } else {
                    while UInt64(index) - min(UInt64(index), ring.acknowledgedSequence) > UInt64(ring.capacity / 4 / 300) {
                        try? await Task.sleep(for: .microseconds(200))
                    }
                }
                ring.append(encoder.frame(for: record(index, .now)), source: source)
            }
        }
        await producer.value
        while ring.acknowledgedSequence < UInt64(records) { try await Task.sleep(for: .milliseconds(1)) }
        try await group.stop()
    }

    private static func startCollector(_ directory: String, sinks: [SinkConfiguration], logger: Logger) async throws -> BackgroundCollector {
        var configuration = CollectorConfiguration(port: 0, dataDirectory: directory)
        configuration.sinks = sinks
        return try await BackgroundCollector.start(configuration: configuration, logger: logger)
    }

    private static func percentEncoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                result += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
            }
        }
        return result
    }
}

/// When each record was appended, written by the producer and read after the run.
private final class AppendTimes: Sendable {
    private let times: Mutex<[ContinuousClock.Instant]>

    init(count: Int) {
        times = Mutex(Array(repeating: .now, count: count))
    }

    func set(_ index: Int, _ instant: ContinuousClock.Instant) { times.withLock { $0[index] = instant } }
    func get(_ index: Int) -> ContinuousClock.Instant { times.withLock { $0[index] } }
}
