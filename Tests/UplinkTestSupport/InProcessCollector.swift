import Foundation
import Logging
import Synchronization
import UplinkCollector

/// The tests' logger for agents and collectors whose log no test reads: quiet, or at debug level with
/// `UPLINK_TEST_LOG` set in the environment.
public let testLogger: Logger = {
    var logger = Logger(label: "uplink.test")
    logger.logLevel = ProcessInfo.processInfo.environment["UPLINK_TEST_LOG"] == nil ? .critical : .debug
    return logger
}()

/// A collector running in this process on a free loopback port: the product's `BackgroundCollector`, as the embedded
/// collector runs it. The one collector harness of the collector and end-to-end tests (`withCollector` scopes one to
/// a body).
public final class InProcessCollector: Sendable {
    public let background: BackgroundCollector
    public let dataDirectory: String

    /// Runs `configuration` as it is.
    public init(
        configuration: CollectorConfiguration, logger: Logger = testLogger, stdout: any CollectorOutput = StandardOutput(),
        documentValidator: RemoteDocumentValidator? = nil
    ) async throws {
        background = try await BackgroundCollector.start(
            configuration: configuration, logger: logger, stdout: stdout, documentValidator: documentValidator)
        dataDirectory = configuration.dataDirectory
    }

    /// A collector on port 0 storing records.jsonl (no stdout sink) in `dataDirectory`, by default a fresh temporary
    /// directory `uplink-<name>-…`; `tune` changes the configuration before it starts.
    public convenience init(
        name: String, token: String? = nil, dataDirectory: String? = nil, logger: Logger = testLogger,
        tune: (inout CollectorConfiguration) -> Void = { _ in }
    ) async throws {
        var configuration = CollectorConfiguration()
        configuration.port = 0
        configuration.dataDirectory = try dataDirectory ?? TestDirectories.make("uplink-\(name)")
        configuration.stdoutSink = false
        configuration.jsonlSink = true
        configuration.token = token
        tune(&configuration)
        try await self.init(configuration: configuration, logger: logger)
    }

    public var collector: Collector { background.collector }
    public var port: Int { background.port }
    public var url: String { background.url }

    /// How many records it has stored so far.
    public var recordsStored: Int { Int(collector.statistics().recordsStored) }

    /// Waits (`eventually`) until it has stored `count` records; false after `timeout`.
    public func waitForStored(_ count: Int, timeout: Duration) async -> Bool {
        await eventually(timeout: timeout) { recordsStored >= count }
    }

    /// Waits (`settles`) until the stored count has not changed for `quiet`, at most `timeout`.
    public func waitUntilQuiet(quiet: Duration, timeout: Duration) async {
        await settles(quiet: quiet, timeout: timeout) { recordsStored }
    }

    /// Graceful shutdown: the streams end, what was received is stored.
    public func stop() async throws {
        try await background.stop()
    }
}

/// Runs a collector with `configuration` for the duration of `body`, then shuts it down gracefully (also when `body`
/// throws).
public func withCollector<T>(
    _ configuration: CollectorConfiguration, output: any CollectorOutput = RecordingOutput(), logger: Logger = testLogger,
    documentValidator: RemoteDocumentValidator? = nil, _ body: (Collector, Int) async throws -> T
) async throws -> T {
    let running = try await InProcessCollector(
        configuration: configuration, logger: logger, stdout: output, documentValidator: documentValidator)
    let result: T
    do {
        result = try await body(running.collector, running.port)
    } catch {
        try? await running.stop()
        throw error
    }
    try await running.stop()
    return result
}

/// Collects what the stdout sink writes.
public final class RecordingOutput: CollectorOutput {
    private let bytes = Mutex<[UInt8]>([])

    public init() {}

    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        self.bytes.withLock { $0.append(contentsOf: bytes) }
    }

    public var text: String { String(decoding: bytes.withLock { $0 }, as: UTF8.self) }
    public var lines: [String] { text.split(separator: "\n", omittingEmptySubsequences: false).dropLast().map(String.init) }
}
