import AsyncHTTPClient
import Logging
import NIOPosix
import Synchronization
import UplinkCore

extension Collector {
    /// Per sink, what its forwarder did so far: the configured `collector.sinks`, or without them the implicit
    /// `collector.stdout` sink when standard output is on.
    public func sinkStatistics() -> [SinkStatistics] {
        forwarding.withLock { $0 }.map(\.statistics.snapshot)
    }

    /// Runs `body` (the server) with a forwarder per sink (`CollectorConfiguration.forwardedSinks`) and the log's
    /// retention alongside; stops them when `body` returns.
    func withForwarders(storage: Storage, _ body: () async throws -> Void) async throws {
        let log = storage.log
        let sinks = configuration.forwardedSinks
        // No sink, no client (the default configuration without standard output has none).
        let client: HTTPClient? = sinks.isEmpty ? nil : Self.makeSinkClient()
        var forwarders: [Forwarder] = []
        do {
            for sink in sinks {
                guard let client else { break }
                let store = try sink.kind.makeSink(
                    SinkContext(
                        timeout: sink.timeout, collector: configuration, output: output, client: client, logger: logger))
                forwarders.append(
                    try Forwarder(
                        configuration: sink, sink: store, log: log, cursorDirectory: configuration.cursorDirectory,
                        deadLetterDirectory: configuration.deadLetterDirectory,
                        startAtLogEnd: configuration.sinks == nil, logger: logger))
            }
        } catch {
            try? await client?.shutdown()
            throw error
        }
        forwarding.withLock { $0 = forwarders }
        let settings = configuration.log
        let logger = self.logger
        let running = forwarders
        var tasks = running.map { forwarder in Task { await forwarder.run() } }
        // A log that is one file (`records.jsonl`) is never deleted: no retention.
        guard case .segments = log.layout else {
            return try await runThenStop(body, tasks: tasks, forwarders: running, client: client)
        }
        tasks.append(Task {
            while !Task.isCancelled {
                // Read before the sweep: a change during it makes the wait below return at once.
                let seen = log.retentionChanges.value
                let ageOut = try? await NIOThreadPool.singleton.runIfActive {
                    LogRetention.sweep(
                        log: log, settings: settings, forwarders: running, now: WallClock.nowNanoseconds() / 1_000_000_000,
                        logger: logger)
                }
                if let ageOut = ageOut ?? nil {
                    // One second past the limit: file times have whole seconds.
                    await log.retentionChanges.wait(until: seen + 1, deadline: .now + .seconds(ageOut + 1), clock: .continuous)
                } else {
                    await log.retentionChanges.wait(until: seen + 1)
                }
            }
        })
        try await runThenStop(body, tasks: tasks, forwarders: running, client: client)
    }

    /// The client the HTTP sinks share.
    private static func makeSinkClient() -> HTTPClient {
        var http = HTTPClient.Configuration()
        // The forwarder retries with the sink's backoff (and counts it); the client's own connect retries would
        // hide a refused connection until the request's deadline.
        http.connectionPool.retryConnectionEstablishment = false
        http.timeout.connect = .seconds(5)
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
    }

    private func runThenStop(
        _ body: () async throws -> Void, tasks: [Task<Void, Never>], forwarders: [Forwarder], client: HTTPClient?
    ) async throws {
        do {
            try await body()
        } catch {
            await stop(tasks, forwarders: forwarders, client: client)
            throw error
        }
        await stop(tasks, forwarders: forwarders, client: client)
    }

    private func stop(_ tasks: [Task<Void, Never>], forwarders: [Forwarder], client: HTTPClient?) async {
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
        for forwarder in forwarders { await forwarder.sink.shutdown() }
        try? await client?.shutdown()
    }
}
