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
        let (remote, clock) = try Self.agent(root: root, url: server.url, seed: seed)
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
        let (remote, clock) = try Self.agent(root: root, url: server.url, seed: seed)
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

    /// An agent of a box whose collector is `url` (remote configuration on, poll interval 5m), on a `ManualClock`,
    /// drawing its jitter from `SplitMix64(seed:)`.
    static func agent(root: String, url: String, seed: UInt64) throws -> (RemoteAgent, ManualClock) {
        let yaml = """
            agent: { id: edge-1, state_dir: \(root)/state }
            uplink: { url: "\(url)" }
            sources: [{ name: load, type: load, interval: 1h }]
            remote_config: { enabled: true, require_signature: false, poll_interval: 5m }
            """
        let decoded = decode(yaml)
        let local = try #require(decoded.value, "\(decoded.issues)")
        let logger = Logger(label: "remote-poll-test")
        let store = RemoteConfigStore(stateDirectory: local.agent.stateDirectory)
        let startup = RemoteAgent.startup(local: local, store: store, logger: logger)
        let agent = Agent(configuration: local.agentConfiguration(embedded: nil, environment: [:]), logger: logger)
        let clock = ManualClock()
        let client = RemoteConfigClient(
            uplink: agent.configuration.uplink, logger: logger, clock: ContinuousClock())
        let remote = RemoteAgent(
            startup: startup, local: local, store: store, client: client,
            configuration: RunningConfiguration(agent: agent, local: local, embedded: nil), agent: agent, clock: clock,
            logger: logger, random: SplitMix64(seed: seed))
        return (remote, clock)
    }
}
