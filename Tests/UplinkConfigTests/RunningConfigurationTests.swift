import Logging
import ServiceLifecycle
import Testing
import UplinkAgent
import UplinkTestSupport

/// `RunningConfiguration` applies one change at a time, although an actor lets a second call in at every `await`:
/// a SIGHUP reload that arrives while a remote apply waits for a source to stop must neither plan from what is
/// about to be replaced nor be undone when that apply ends.
@Suite("Running configuration: one change at a time", .timeLimit(.minutes(2)))
struct RunningConfigurationTests {
    /// The agent file of `root` with `sources` (flow-style YAML items, one per line).
    static func file(root: String, _ sources: [String]) throws -> UplinkFile {
        let yaml = """
            agent: { id: edge-1, state_dir: \(root)/state }
            uplink: { url: "http://127.0.0.1:9" }
            sources:
            \(sources.map { "  - " + $0 }.joined(separator: "\n"))
            """
        let decoded = decode(yaml)
        return try #require(decoded.value, "\(decoded.issues)")
    }

    @Test("A local reload and a remote apply at once: both take effect, and what it says runs is what runs", arguments: 0..<5)
    func reloadDuringRemoteApply(round: Int) async throws {
        let root = try TestDirectories.make("uplink-running-configuration")
        let local = try Self.file(root: root, ["{ name: a, type: load, interval: 1h }"])
        let reloaded = try Self.file(root: root, ["{ name: a, type: load, interval: 1h }", "{ name: b, type: load, interval: 1h }"])
        let remoteBefore = try Self.file(root: root, ["{ name: x, type: load, interval: 1h }"]).sources
        // A changed source: applying it stops the running `x` and waits until it has returned.
        let remoteAfter = try Self.file(root: root, ["{ name: x, type: load, interval: 2h }"]).sources
        let logger = Logger(label: "running-configuration-test")
        let started = RunningConfiguration.merged(local: local, remote: remoteBefore).file
        let agent = Agent(configuration: started.agentConfiguration(embedded: nil, environment: [:]), logger: logger)
        let configuration = RunningConfiguration(agent: agent, local: local, remote: remoteBefore, embedded: nil)
        let group = ServiceGroup(
            configuration: .init(services: agent.serviceConfigurations, gracefulShutdownSignals: [], logger: logger))
        let running = Task { try await group.run() }
        #expect(await eventually(timeout: .seconds(30)) { agent.runningSourceNames.sorted() == ["a", "x"] })

        async let remoteApplied = configuration.replaceRemote(with: remoteAfter)
        async let localApplied = configuration.replaceLocal(with: reloaded)
        let (remoteChange, localChange) = await (remoteApplied, localApplied)

        #expect(await configuration.local == reloaded, "the reload was undone")
        #expect(await configuration.remote == remoteAfter, "the remote apply was undone")
        let said = await configuration.running.sources
        #expect(said.map(\.name).sorted() == ["a", "b", "x"])
        #expect(said.first { $0.name == "x" } == remoteAfter.first, "x runs as the remote apply left it")
        #expect(agent.runningSourceNames.sorted() == ["a", "b", "x"], "what runs is what the configuration says")
        // Each change planned from what the other left: between them, `b` added once and `x` changed once.
        #expect((remoteChange.plan.added + localChange.plan.added) == ["b"])
        #expect((remoteChange.plan.changed + localChange.plan.changed) == ["x"])

        await group.triggerGracefulShutdown()
        _ = await running.result
    }
}
