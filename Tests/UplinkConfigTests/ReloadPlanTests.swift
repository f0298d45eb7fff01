import Testing
import UplinkAgent
import UplinkConfig
import UplinkCore

/// `ReloadPlan`: what a reload applies, from two decoded files.
@Suite("Reload plan")
struct ReloadPlanTests {
    static func file(_ yaml: String) throws -> UplinkFile {
        let result = decode(yaml)
        return try #require(result.value, "\(result.issues)")
    }

    static let base = """
        agent:
          id: box
          state_dir: /var/lib/uplink
        buffer:
          max_bytes: 8MiB
        uplink:
          url: http://a.test:4318
        sources:
          - name: cpu
            type: cpu
          - name: mem
            type: memory
          - name: app
            type: tail
            paths: [/var/log/app.log]
        """

    @Test("sources are matched by name: unchanged, changed, removed and added ones are told apart")
    func sources() throws {
        let old = try Self.file(Self.base)
        let new = try Self.file(Self.base
            .replacingOccurrences(of: "  - name: mem\n    type: memory\n", with: "")
            .replacingOccurrences(of: "/var/log/app.log", with: "/var/log/app2.log")
            + "\n  - name: load\n    type: load\n")
        let plan = ReloadPlan(from: old, to: new, hasEmbeddedCollector: false)
        #expect(plan.unchanged == ["cpu"])
        #expect(plan.changed == ["app"])
        #expect(plan.removed == ["mem"])
        #expect(plan.added == ["load"])
        #expect(!plan.uplinkChanged)
        #expect(plan.deferred.isEmpty)
        #expect(plan.running == new)
    }

    @Test("remote sources follow the local ones; a remote source named like a local one is left out, the local wins")
    func mergedWithRemote() throws {
        let local = try Self.file(Self.base)
        let remote = try Self.file(Self.base.replacingOccurrences(of: "name: cpu", with: "name: remote-cpu"))
            .sources.filter { $0.name != "mem" }
        let (merged, conflicts) = RunningConfiguration.merged(local: local, remote: remote)
        #expect(merged.sources.map(\.name) == ["cpu", "mem", "app", "remote-cpu"])
        #expect(conflicts == ["app"])
        #expect(merged.sources.first { $0.name == "app" } == local.sources.first { $0.name == "app" })
        let plan = ReloadPlan(from: local, to: merged, hasEmbeddedCollector: false)
        #expect(plan.added == ["remote-cpu"] && plan.removed.isEmpty && plan.changed.isEmpty && !plan.uplinkChanged)
    }

    @Test("the same file changes nothing")
    func identical() throws {
        let plan = ReloadPlan(from: try Self.file(Self.base), to: try Self.file(Self.base), hasEmbeddedCollector: false)
        #expect(plan.isEmpty)
        #expect(plan.unchanged == ["cpu", "mem", "app"])
    }

    @Test("uplink settings and agent.id change the uplink; nothing else does")
    func uplink() throws {
        let old = try Self.file(Self.base)
        for (from, to) in [
            ("url: http://a.test:4318", "url: http://b.test:4318"),
            ("url: http://a.test:4318", "url: http://a.test:4318\n  token: secret"),
            ("url: http://a.test:4318", "url: http://a.test:4318\n  backoff:\n    max: 5s"),
            ("id: box", "id: other-box"),
        ] {
            let plan = ReloadPlan(
                from: old, to: try Self.file(Self.base.replacingOccurrences(of: from, with: to)), hasEmbeddedCollector: false)
            #expect(plan.uplinkChanged, "\(to)")
            #expect(plan.added.isEmpty && plan.removed.isEmpty && plan.changed.isEmpty)
        }
    }

    @Test("the box's labels travel with the stream: new ones change the uplink while remote configuration is on, not while it is off")
    func labels() throws {
        func remote(enabled: Bool, site: String) -> String {
            Self.base + "\nremote_config: { enabled: \(enabled), require_signature: false, labels: { site: \(site) } }\n"
        }
        let on = ReloadPlan(
            from: try Self.file(remote(enabled: true, site: "a")), to: try Self.file(remote(enabled: true, site: "b")),
            hasEmbeddedCollector: false)
        #expect(on.uplinkChanged)
        let off = ReloadPlan(
            from: try Self.file(remote(enabled: false, site: "a")), to: try Self.file(remote(enabled: false, site: "b")),
            hasEmbeddedCollector: false)
        #expect(!off.uplinkChanged)
    }

    @Test("buffer and state_dir changes are deferred to the next start, and the running values stay")
    func deferred() throws {
        let old = try Self.file(Self.base)
        let new = try Self.file(Self.base
            .replacingOccurrences(of: "max_bytes: 8MiB", with: "max_bytes: 16MiB\n  overflow: drop_newest")
            .replacingOccurrences(of: "state_dir: /var/lib/uplink", with: "state_dir: /srv/uplink"))
        let plan = ReloadPlan(from: old, to: new, hasEmbeddedCollector: false)
        #expect(plan.deferred == ["buffer.max_bytes", "buffer.overflow", "agent.state_dir"])
        #expect(plan.running.buffer == old.buffer)
        #expect(plan.running.agent.stateDirectory == "/var/lib/uplink")
        #expect(plan.isEmpty)
        // Compared against `running`, the next reload of the same file names them again.
        #expect(ReloadPlan(from: plan.running, to: new, hasEmbeddedCollector: false).deferred.count == 3)
    }

    @Test("an uplink.linger change is deferred: no new stream, every source keeps the budget it started with")
    func lingerDeferred() throws {
        let old = try Self.file(Self.base)
        let new = try Self.file(Self.base.replacingOccurrences(
            of: "url: http://a.test:4318", with: "url: http://a.test:4318\n  linger: 1s"))
        let plan = ReloadPlan(from: old, to: new, hasEmbeddedCollector: false)
        #expect(new.uplink.linger == .seconds(1))
        #expect(plan.deferred == ["uplink.linger"])
        #expect(plan.running.uplink.linger == .zero)
        #expect(!plan.uplinkChanged)
        #expect(plan.isEmpty)
    }

    @Test("switching to an embedded collector, or changing the running one, waits for the next start")
    func embedded() throws {
        let old = try Self.file(Self.base)
        let toEmbedded = try Self.file(Self.base.replacingOccurrences(of: "url: http://a.test:4318", with: "url: embedded"))
        let plan = ReloadPlan(from: old, to: toEmbedded, hasEmbeddedCollector: false)
        #expect(plan.deferred == ["uplink.url"])
        #expect(plan.running.uplink.target == old.uplink.target)
        #expect(!plan.uplinkChanged)

        let embedded = try Self.file(Self.base.replacingOccurrences(
            of: "url: http://a.test:4318", with: "url: embedded") + "\ncollector:\n  listen: 127.0.0.1:4318\n")
        let moved = try Self.file(Self.base.replacingOccurrences(
            of: "url: http://a.test:4318", with: "url: embedded") + "\ncollector:\n  listen: 127.0.0.1:4400\n")
        let collectorPlan = ReloadPlan(from: embedded, to: moved, hasEmbeddedCollector: true)
        #expect(collectorPlan.deferred == ["collector"])
        #expect(collectorPlan.running.collector == embedded.collector)
        // The same section written elsewhere in the file, or quoted differently, is no change.
        let rewritten = try Self.file("collector:\n  listen: \"127.0.0.1:4318\"\n\n" + Self.base.replacingOccurrences(
            of: "url: http://a.test:4318", with: "url: embedded"))
        #expect(ReloadPlan(from: embedded, to: rewritten, hasEmbeddedCollector: true).deferred == [])
    }
}

/// `agent.metrics_listen`: decoded as an address, deferred by a reload.
@Suite("Agent metrics endpoint setting")
struct MetricsListenConfigTests {
    @Test("agent.metrics_listen is an address, absent by default, and carried into the agent configuration")
    func decoded() throws {
        let none = try ReloadPlanTests.file(ReloadPlanTests.base)
        #expect(none.agent.metricsListen == nil)
        #expect(none.agentConfiguration(embedded: nil, environment: [:]).metricsListen == nil)
        let set = try ReloadPlanTests.file(
            ReloadPlanTests.base.replacingOccurrences(of: "  id: box\n", with: "  id: box\n  metrics_listen: 127.0.0.1:9464\n"))
        #expect(set.agent.metricsListen == ConfigHostPort(host: "127.0.0.1", port: 9464))
        #expect(set.agentConfiguration(embedded: nil, environment: [:]).metricsListen?.port == 9464)
    }

    @Test("a bad address names the file, line, column and key")
    func invalid() {
        let problems = issues(
            "agent: { metrics_listen: 'not an address' }\nuplink: { url: embedded }\nsources: [{ name: cpu, type: cpu }]\n")
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("test.yaml:1:26: agent.metrics_listen: invalid address") == true, "\(problems)")
    }

    @Test("a reload defers a changed metrics_listen to the next start")
    func deferred() throws {
        let old = try ReloadPlanTests.file(ReloadPlanTests.base)
        let new = try ReloadPlanTests.file(
            ReloadPlanTests.base.replacingOccurrences(of: "  id: box\n", with: "  id: box\n  metrics_listen: 127.0.0.1:9464\n"))
        let plan = ReloadPlan(from: old, to: new, hasEmbeddedCollector: false)
        #expect(plan.deferred == ["agent.metrics_listen"])
        #expect(plan.running.agent.metricsListen == nil)
        #expect(plan.isEmpty)
    }
}
