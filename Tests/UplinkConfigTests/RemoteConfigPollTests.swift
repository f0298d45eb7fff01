import Logging
import Synchronization
import Testing
import UplinkAgent
import UplinkCore
import UplinkTestSupport
import UplinkTransport

/// The poll interval's ± 10 % jitter and the quicker retry after a failed look, from a random source the test chooses, on a
/// clock the test advances.
@Suite("Remote config: the poll interval's jitter, the retry after a failed look", .timeLimit(.minutes(2)))
struct RemoteConfigPollTests {
    typealias RemoteAgent = RemoteConfigAgent<ManualClock>

    @Test("The delay is the interval times 0.9 to 1.1, spread over all of it, and follows the generator")
    func bounds() {
        let interval = Duration.seconds(300)
        var random = SplitMix64(seed: 42)
        let delays = (0..<10_000).map { _ in RemoteAgent.pollDelay(interval, using: &random) }
        #expect(delays.allSatisfy { $0 >= .seconds(270) && $0 <= .seconds(330) }, "\(delays.min()!)...\(delays.max()!)")
        // Near both ends.
        #expect(delays.min()! < .seconds(270.1) && delays.max()! > .seconds(329.9), "\(delays.min()!)...\(delays.max()!)")
        // Spread over the whole range, not bunched up: each tenth of it gets a share.
        let tenths = Dictionary(grouping: delays) { min(9, Int((($0 - .seconds(270)) / .seconds(60)) * 10)) }
        #expect(tenths.count == 10)
        #expect(tenths.values.allSatisfy { $0.count > 700 }, "\(tenths.mapValues(\.count))")
        // The same seed, the same delays.
        var again = SplitMix64(seed: 42)
        #expect((0..<10_000).map { _ in RemoteAgent.pollDelay(interval, using: &again) } == delays)
    }

    @Test("A running agent sleeps the jittered interval on its clock: not a moment less, and asks again when it is up",
          arguments: [UInt64(1), 2, 3])
    func agentWaitsTheJitteredInterval(seed: UInt64) async throws {
        // The delays the agent must sleep: what the same generator draws.
        var expectedRandom = SplitMix64(seed: seed)
        let first = RemoteAgent.pollDelay(.seconds(300), using: &expectedRandom)
        let second = RemoteAgent.pollDelay(.seconds(300), using: &expectedRandom)
        #expect(first != second)
        let root = try TestDirectories.make("uplink-remote-poll")
        // The collector assigns nothing (204): the agent just asks again at its next look.
        let server = TestHTTPServer { _ in .full(status: 204, headers: [], body: []) }
        try await server.start()
        let (remote, clock, _) = try Self.agent(root: root, url: server.url, seed: seed)
        let manifestRequests = { server.requests.filter { $0.uri == "/v1/config" }.count }
        let running = Task { try await remote.run() }

        // The first look at once, then a sleep of exactly the first jittered interval.
        #expect(await eventually(timeout: .seconds(30)) { manifestRequests() == 1 && clock.sleepsLeft == [first] })
        // Not a nanosecond early: just short of it the agent still sleeps, and has not asked again.
        clock.advance(by: first - .nanoseconds(1))
        #expect(clock.sleepsLeft == [.nanoseconds(1)])
        #expect(manifestRequests() == 1)
        // When it is up, it asks again, and sleeps the next jittered interval.
        clock.advance(by: .nanoseconds(1))
        #expect(await eventually(timeout: .seconds(30)) { manifestRequests() == 2 && clock.sleepsLeft == [second] })
        #expect(manifestRequests() == 2)

        running.cancel()
        _ = await running.result
        await server.stop()
    }

    @Test("A failed look is tried again on the backoff (1 s × 2ⁿ, full jitter, at most poll_interval), then the poll interval once one succeeds",
          arguments: [UInt64(4), 5])
    func failedLooksBackOff(seed: UInt64) async throws {
        let interval = Duration.seconds(300)
        let backoff = RemoteAgent.retryBackoff(pollInterval: interval)
        #expect(backoff.ceiling(attempt: 0) == .seconds(1) && backoff.ceiling(attempt: 3) == .seconds(8))
        #expect(backoff.ceiling(attempt: 8) == .seconds(256) && backoff.ceiling(attempt: 9) == interval && backoff.ceiling(attempt: 60) == interval)
        // What the agent must sleep: two retries after the two 503s, then the poll interval after the 204.
        var expectedRandom = SplitMix64(seed: seed)
        let firstRetry = backoff.delay(attempt: 0, using: &expectedRandom)
        let secondRetry = backoff.delay(attempt: 1, using: &expectedRandom)
        let poll = RemoteAgent.pollDelay(interval, using: &expectedRandom)
        let root = try TestDirectories.make("uplink-remote-retry")
        let answered = Mutex(0)
        let server = TestHTTPServer { request in
            guard request.uri == "/v1/config" else { return .full(status: 404, headers: [], body: []) }
            let count = answered.withLock { count in
                count += 1
                return count
            }
            return count <= 2 ? .full(status: 503, headers: [], body: Array("busy".utf8)) : .full(status: 204, headers: [], body: [])
        }
        try await server.start()
        let (remote, clock, _) = try Self.agent(root: root, url: server.url, seed: seed)
        let manifestRequests = { server.requests.filter { $0.uri == "/v1/config" }.count }
        let running = Task { try await remote.run() }

        #expect(await eventually(timeout: .seconds(30)) { manifestRequests() == 1 && clock.sleepsLeft == [firstRetry] })
        clock.advance(by: firstRetry)
        #expect(await eventually(timeout: .seconds(30)) { manifestRequests() == 2 && clock.sleepsLeft == [secondRetry] })
        clock.advance(by: secondRetry)
        // Answered: the next look is a poll interval away again.
        #expect(await eventually(timeout: .seconds(30)) { manifestRequests() == 3 && clock.sleepsLeft == [poll] })
        #expect(manifestRequests() == 3)

        running.cancel()
        _ = await running.result
        await server.stop()
    }

    /// The agent file of a box whose collector is `url`, with remote configuration on (poll interval 5m) unless
    /// `enabled` is false, `token` its bearer token and `labels` its labels.
    static func file(root: String, url: String, enabled: Bool = true, token: String = "first", labels: String = "{}") throws -> UplinkFile {
        let yaml = """
            agent: { id: edge-1, state_dir: \(root)/state }
            uplink: { url: "\(url)", token: \(token) }
            sources: [{ name: load, type: load, interval: 1h }]
            remote_config: { enabled: \(enabled), require_signature: false, poll_interval: 5m, labels: \(labels) }
            """
        let decoded = decode(yaml)
        return try #require(decoded.value, "\(decoded.issues)")
    }

    /// An agent of a box whose collector is `url` (see `file`), on a `ManualClock`, drawing its jitter from
    /// `SplitMix64(seed:)`, and the running configuration it changes.
    static func agent(
        root: String, url: String, seed: UInt64, enabled: Bool = true
    ) throws -> (RemoteAgent, ManualClock, RunningConfiguration) {
        let local = try file(root: root, url: url, enabled: enabled)
        let logger = Logger(label: "remote-poll-test")
        let store = RemoteConfigStore(stateDirectory: local.agent.stateDirectory)
        let startup = RemoteAgent.startup(local: local, store: store, logger: logger)
        let agent = Agent(configuration: local.agentConfiguration(embedded: nil, environment: [:]), logger: logger)
        let clock = ManualClock()
        let configuration = RunningConfiguration(agent: agent, local: local, embedded: nil)
        let remote = RemoteAgent(
            startup: startup, local: local, store: store,
            client: { RemoteConfigClient(uplink: $0.agentConfiguration(embedded: nil, environment: [:]).uplink, labels: $0.remoteConfig.labels, logger: logger, clock: ContinuousClock()) },
            configuration: configuration, agent: agent, clock: clock,
            logger: logger, random: SplitMix64(seed: seed))
        return (remote, clock, configuration)
    }

    @Test("A reload that changes the token and the labels: the next look sends the new ones; one that turns remote_config off stops the looks, and on again resumes them")
    func reloadChangesTheClient() async throws {
        let root = try TestDirectories.make("uplink-remote-reload")
        let server = TestHTTPServer { _ in .full(status: 204, headers: [], body: []) }
        try await server.start()
        let (remote, clock, configuration) = try Self.agent(root: root, url: server.url, seed: 9)
        let manifestRequests = { server.requests.filter { $0.uri == "/v1/config" } }
        let running = Task { try await remote.run() }
        #expect(await eventually(timeout: .seconds(30)) { manifestRequests().count == 1 && clock.sleepsLeft.count == 1 })
        #expect(manifestRequests().last?.header("Authorization") == "Bearer first")
        #expect(manifestRequests().last?.header("Uplink-Labels") == nil)

        // What the reloader does: the new file in force, then the remote configuration told.
        _ = await configuration.replaceLocal(with: try Self.file(root: root, url: server.url, token: "second", labels: "{ site: berlin }"))
        remote.localFileChanged()
        #expect(await eventually(timeout: .seconds(30)) { manifestRequests().count == 2 })
        #expect(manifestRequests().last?.header("Authorization") == "Bearer second")
        #expect(manifestRequests().last?.header("Uplink-Labels") == "site=berlin")

        // Off: no look, not even when the poll interval is up; the status says so.
        _ = await configuration.replaceLocal(with: try Self.file(root: root, url: server.url, enabled: false, token: "second"))
        remote.localFileChanged()
        #expect(await eventually(timeout: .seconds(30)) { remote.status.state == .disabled && clock.sleepsLeft.isEmpty })
        clock.advance(by: .seconds(400))
        #expect(manifestRequests().count == 2)
        // On again: it looks at once.
        _ = await configuration.replaceLocal(with: try Self.file(root: root, url: server.url, token: "second"))
        remote.localFileChanged()
        #expect(await eventually(timeout: .seconds(30)) { manifestRequests().count == 3 && remote.status.state == .idle })

        running.cancel()
        _ = await running.result
        await server.stop()
    }
}
