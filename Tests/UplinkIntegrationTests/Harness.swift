import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Testing
import UplinkAgent
import UplinkCollector
import UplinkCore
import UplinkSources
import UplinkTestSupport
import UplinkTransport
import UplinkWire

/// Shared pieces of the end-to-end tests: temporary directories, stored records, and the agent runner
/// (`RunningAgent`). The collector harness is UplinkTestSupport's `InProcessCollector`, shared with the collector tests.
enum Harness {
    static func temporaryDirectory(_ name: String) throws -> String {
        try TestDirectories.make("uplink-\(name)")
    }

    /// A state directory of an in-process agent's own (the agent creates it). Never a shared one: concurrent tests
    /// would share the tail's checkpoint files, and run as root the agent creates it wherever it points.
    static func agentStateDirectory() -> String {
        TestDirectories.reserve("uplink-agent-state")
    }

    /// An agent that is never run, on `loop`: its uplink does not connect, only its ring and what reads it are used.
    static func agentNeverRun(id: String, bufferBytes: Int, on loop: any EventLoop) -> Agent {
        Agent(
            configuration: AgentConfiguration(
                uplink: UplinkConfiguration(url: "http://127.0.0.1:9", agentID: id, jitterSeed: 7),
                sources: [], bufferBytes: bufferBytes, overflow: .dropOldest, stateDirectory: agentStateDirectory()),
            logger: testLogger, eventLoop: loop)
    }

    /// The stored records of `records.jsonl`, decoded with the wire parser (which ignores the agent/epoch keys).
    static func storedRecords(in dataDirectory: String) throws -> [(sequence: UInt64, record: Record)] {
        let data = try Data(contentsOf: URL(fileURLWithPath: dataDirectory + "/records.jsonl"))
        var result: [(UInt64, Record)] = []
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var start = 0
            for index in 0..<bytes.count where bytes[index] == UInt8(ascii: "\n") {
                let line = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                start = index + 1
                if case .record(let sequence, let record) = try WireLineParser.decode(line) {
                    result.append((sequence, record))
                }
            }
        }
        return result
    }

    /// Compares the generator counters found with `0..<total`; nil when each appears exactly once, else a short
    /// description of what is missing or repeated (never the whole list).
    static func exactlyOnceProblem(_ counters: [Int], total: Int) -> String? {
        var seen = [Int](repeating: 0, count: total)
        var outOfRange = 0
        for counter in counters {
            if (0..<total).contains(counter) { seen[counter] += 1 } else { outOfRange += 1 }
        }
        let missing = seen.indices.filter { seen[$0] == 0 }
        let repeated = seen.indices.filter { seen[$0] > 1 }
        guard !missing.isEmpty || !repeated.isEmpty || outOfRange > 0 else { return nil }
        return "\(missing.count) missing (first \(missing.prefix(5))), \(repeated.count) repeated (first \(repeated.prefix(5))), "
            + "\(outOfRange) out of range"
    }

    /// The generator's record counter `n` of a stored record.
    static func generatorCounter(_ record: Record) -> Int? {
        guard case .log(let line) = record.payload else { return nil }
        return line.fields.first { $0.key == "n" }.flatMap { Int($0.value) }
    }
}

/// An agent (sources + ring + uplink) running as a service group in this process: the one agent runner of the
/// end-to-end tests. Its log goes to `log` (and to stderr with `UPLINK_TEST_LOG` set).
final class RunningAgent: Sendable {
    let agent: Agent
    /// Every event the agent logged, for tests that check what it told the operator.
    let log = LogCapture()
    private let group: ServiceGroup
    private let task: Task<Void, any Error>
    /// The agent's send path loop, its own as in an agent process: the singleton's loops carry every other test's
    /// channels, and the tailer runs on this loop.
    private let loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)

    /// Runs an agent with `uplink` (TLS, proxy, compression, …) given a fixed jitter seed unless it has one, quick
    /// reconnects (from 20 ms, at most 400 ms) and a 30 s connect timeout (on loopback the default 5 s runs out only
    /// on a loaded machine, in the middle of a TLS handshake that would have succeeded, and tests that count failures
    /// would count that; the stall timeout still bounds it where a test shortens that); `tune` changes the uplink
    /// configuration last.
    init(
        _ uplink: UplinkConfiguration,
        sources: [AgentConfiguration.NamedSource],
        bufferBytes: Int = 8 << 20,
        overflow: OverflowPolicy = .dropOldest,
        stateDirectory: String? = nil,
        tune: (inout UplinkConfiguration) -> Void = { _ in }
    ) {
        var uplink = uplink
        uplink.jitterSeed = uplink.jitterSeed ?? 7
        uplink.backoff = Backoff(initial: .milliseconds(20), multiplier: 2, maximum: .milliseconds(400))
        uplink.connectTimeout = .seconds(30)
        tune(&uplink)
        let logger = log.logger
        let agent = Agent(
            configuration: AgentConfiguration(
                uplink: uplink, sources: sources, bufferBytes: bufferBytes, overflow: overflow,
                stateDirectory: stateDirectory ?? Harness.agentStateDirectory()),
            logger: logger,
            eventLoop: loops.next()
        )
        let group = ServiceGroup(
            configuration: .init(services: agent.serviceConfigurations, gracefulShutdownSignals: [], logger: logger))
        self.agent = agent
        self.group = group
        self.task = Task { try await group.run() }
    }

    /// An agent `test-agent` streaming to `url` over plain HTTP.
    convenience init(
        url: String,
        sources: [AgentConfiguration.NamedSource],
        bufferBytes: Int = 8 << 20,
        overflow: OverflowPolicy = .dropOldest,
        stateDirectory: String? = nil,
        tune: (inout UplinkConfiguration) -> Void = { _ in }
    ) {
        self.init(
            UplinkConfiguration(url: url, agentID: "test-agent"), sources: sources, bufferBytes: bufferBytes,
            overflow: overflow, stateDirectory: stateDirectory, tune: tune)
    }

    var ring: RecordRing { agent.ring }
    var uplink: Uplink { agent.uplink }

    /// Graceful shutdown: sources stop, the uplink drains, everything returns.
    func stop() async throws {
        await group.triggerGracefulShutdown()
        try await task.value
        try await loops.shutdownGracefully()
    }

    /// Waits until at least `records` records were appended and the collector acknowledged every record the
    /// ring numbered. (Without the count, a source that is still producing could look finished.)
    func waitUntilAllAcknowledged(records: Int, timeout: Duration) async -> Bool {
        await eventually(timeout: timeout) {
            let statistics = ring.statistics()
            return statistics.nextToWrite > UInt64(records) && statistics.acknowledged + 1 >= statistics.nextToWrite
        }
    }
}

extension AgentConfiguration.NamedSource {
    static func generator(_ name: String = "gen", rate: Double, count: Int?, recordBytes: Int = 200) -> Self {
        .init(name: name, config: SourceConfig(GeneratorConfig(rate: rate, recordBytes: recordBytes, count: count)))
    }
}
