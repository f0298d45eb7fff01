import Testing
import UplinkAgent
import UplinkCollector
import UplinkConfig
import UplinkCore
import UplinkSources
import UplinkTransport

@Suite("Valid configurations")
struct ValidConfigurationTests {
    @Test func defaultsAreApplied() throws {
        let file = try decode(minimalAgent).get()
        #expect(file.path == "test.yaml")
        #expect(file.configuresAgent)
        #expect(file.agent == UplinkFile.AgentSection(id: AgentConfiguration.hostName(), stateDirectory: "/var/lib/uplink"))
        #expect(file.buffer.maxBytes == 64 << 20)
        #expect(file.buffer.overflow == .dropOldest)
        #expect(file.uplink.target == .url("http://collector.test:4318"))
        #expect(file.uplink.token == nil)
        #expect(file.uplink.backoff == Backoff())
        #expect(file.sources == [.init(name: "cpu", config: SourceConfig(CPUConfig()))])
        #expect(file.collector == nil)

        // The section defaults are the transport's defaults.
        let defaults = UplinkConfiguration(url: "", agentID: "")
        #expect(file.uplink.heartbeat == defaults.heartbeatInterval)
        #expect(file.uplink.stallTimeout == defaults.stallTimeout)
        #expect(file.uplink.streamBufferBytes == defaults.streamBufferBytes)
        #expect(file.uplink.drainTimeout == defaults.drainTimeout)
        #expect(file.uplink.backoff == defaults.backoff)

        let configuration = file.agentConfiguration(embedded: EmbeddedCollectorTarget(url: "http://127.0.0.1:9999", token: nil))
        #expect(configuration.uplink.url == "http://collector.test:4318")
        #expect(configuration.uplink.agentID == AgentConfiguration.hostName())
        #expect(configuration.bufferBytes == RecordRing.defaultCapacity)
        #expect(configuration.overflow == .dropOldest)
    }

    @Test func everyKindWithEveryKey() throws {
        let file = try decode("""
            agent: { id: gw-7, state_dir: /srv/uplink }
            buffer: { max_bytes: 1MB, overflow: drop_newest }
            uplink:
              url: https://collector.example:8443/base/
              token: abc
              backoff: { initial: 100ms, multiplier: 1.5, max: 10s, reset_after: 1m }
              heartbeat: 5s
              stall_timeout: 20s
              stream_buffer: 16KiB
              drain_timeout: 0s
            sources:
              - { name: c, type: cpu, interval: 1.5s, per_core: false, proc_root: /host/proc }
              - { name: m, type: memory, interval: 250ms, proc_root: /host/proc }
              - { name: g, type: generator, rate: 0.5, record_bytes: 1KiB, count: 10 }
              - { name: g2, type: generator, rate: 0, record_bytes: 64 }
            """).get()
        #expect(file.agent == UplinkFile.AgentSection(id: "gw-7", stateDirectory: "/srv/uplink"))
        #expect(file.buffer == UplinkFile.BufferSection(maxBytes: 1_000_000, overflow: .dropNewest))
        #expect(file.uplink == UplinkFile.UplinkSection(
            target: .url("https://collector.example:8443/base/"), token: "abc",
            backoff: Backoff(initial: .milliseconds(100), multiplier: 1.5, maximum: .seconds(10), resetAfter: .seconds(60)),
            heartbeat: .seconds(5), stallTimeout: .seconds(20), streamBufferBytes: 16 * 1024, drainTimeout: .zero))
        #expect(file.sources == [
            .init(name: "c", config: SourceConfig(CPUConfig(interval: .milliseconds(1500), perCore: false, procRoot: "/host/proc"))),
            .init(name: "m", config: SourceConfig(MemoryConfig(interval: .milliseconds(250), procRoot: "/host/proc"))),
            .init(name: "g", config: SourceConfig(GeneratorConfig(rate: 0.5, recordBytes: 1024, count: 10))),
            .init(name: "g2", config: SourceConfig(GeneratorConfig(rate: 0, recordBytes: 64, count: nil))),
        ])
        let configuration = file.agentConfiguration(embedded: nil)
        #expect(configuration.uplink.url == "https://collector.example:8443/base/")
        #expect(configuration.uplink.streamURL == "https://collector.example:8443/base/v1/stream")
        #expect(configuration.uplink.token == "abc")
        #expect(configuration.uplink.agentID == "gw-7")
        #expect(configuration.uplink.backoff == file.uplink.backoff)
        #expect(configuration.uplink.heartbeatInterval == .seconds(5))
        #expect(configuration.uplink.stallTimeout == .seconds(20))
        #expect(configuration.uplink.streamBufferBytes == 16 * 1024)
        #expect(configuration.uplink.drainTimeout == .zero)
        #expect(configuration.bufferBytes == 1_000_000)
        #expect(configuration.overflow == .dropNewest)
        #expect(configuration.sources == file.sources)
    }

    @Test func environmentSubstitutionWithDefaults() throws {
        let yaml = """
            agent:
              id: ${AGENT_ID:-fallback-id}
            uplink:
              url: ${SCHEME:-http}://${HOST}:${PORT:-4318}
              token: ${TOKEN}
            sources:
              - name: cpu
                type: cpu
                interval: ${INTERVAL:-2s}
                per_core: ${PER_CORE:-false}
            """
        let first = try decode(yaml, environment: ["HOST": "c.example", "TOKEN": "t0k"]).get()
        #expect(first.agent.id == "fallback-id")
        #expect(first.uplink.target == .url("http://c.example:4318"))
        #expect(first.uplink.token == "t0k")
        #expect(first.sources.first?.config == SourceConfig(CPUConfig(interval: .seconds(2), perCore: false)))

        let second = try decode(yaml, environment: [
            "AGENT_ID": "edge-1", "SCHEME": "https", "HOST": "h", "PORT": "443", "TOKEN": "x", "INTERVAL": "1m",
            "PER_CORE": "true",
        ]).get()
        #expect(second.agent.id == "edge-1")
        #expect(second.uplink.target == .url("https://h:443"))
        #expect(second.sources.first?.config == SourceConfig(CPUConfig(interval: .seconds(60), perCore: true)))
    }

    @Test func tokenFileIsReadAndTrimmed() throws {
        let file = try load(path: fixture("token-file.yaml"), environment: [:]).get()
        #expect(file.uplink.token == "s3cret-token")
        #expect(file.uplink.target == .url("https://collector.test:4318/ingest"))
        #expect(file.agentConfiguration(embedded: nil).uplink.token == "s3cret-token")
    }

    @Test func absoluteTokenFile() throws {
        let file = try decode("""
            uplink:
              url: embedded
              token_file: \(fixture("secret.token"))
            sources: [{ name: cpu, type: cpu }]
            """).get()
        #expect(file.uplink.token == "s3cret-token")
    }

    @Test func collectorOnlyFile() throws {
        let (result, collector) = loadWithCollector(path: fixture("collector-only.yaml"), environment: [:])
        let file = try result.get()
        #expect(!file.configuresAgent)
        #expect(file.sources.isEmpty)
        #expect(collector == CollectorConfiguration(
            host: "0.0.0.0", port: 4400, dataDirectory: "/var/lib/uplink-collector", stdoutSink: false, jsonlSink: true,
            token: "collector-secret", maxLineBytes: 256 * 1024, rejectsFile: nil, fsync: true))
    }

    @Test func collectorSectionMayBeEmpty() throws {
        let (result, collector) = decodeWithCollector("collector:\n")
        let file = try result.get()
        #expect(collector == CollectorConfiguration())
        #expect(collector?.host == "127.0.0.1" && collector?.port == 4318)
        #expect(!file.configuresAgent)
    }

    @Test func embeddedTarget() throws {
        let (result, collector) = decodeWithCollector("""
            uplink: { url: embedded }
            sources: [{ name: cpu, type: cpu }]
            collector:
              listen: "[::1]:4400"
              token: shared
            """)
        let file = try result.get()
        #expect(file.uplink.target == .embedded)
        #expect(collector?.host == "::1" && collector?.port == 4400)
        // The embedded collector's URL and token are the caller's (it started the collector from the section); the
        // agent sends that token unless uplink.token is set.
        let target = EmbeddedCollectorTarget(url: "http://127.0.0.1:5123", token: collector?.token)
        #expect(file.agentConfiguration(embedded: target).uplink.url == "http://127.0.0.1:5123")
        #expect(file.agentConfiguration(embedded: target).uplink.token == "shared")
        #expect(file.agentConfiguration(embedded: nil).uplink.url == "http://127.0.0.1:4318")

        let ownToken = try decode("uplink: { url: embedded, token: mine }\nsources: [{ name: cpu, type: cpu }]\n").get()
        #expect(ownToken.agentConfiguration(embedded: target).uplink.token == "mine")
    }

    @Test func anchorsAndMergeKeysInSources() throws {
        let file = try decode("""
            uplink:
              url: embedded
            sources:
              - &memory { name: memory, type: memory, interval: 3s, proc_root: /host/proc }
              - <<: *memory
                name: cpu
                type: cpu
                per_core: false
            """).get()
        #expect(file.sources == [
            .init(name: "memory", config: SourceConfig(MemoryConfig(interval: .seconds(3), procRoot: "/host/proc"))),
            .init(name: "cpu", config: SourceConfig(CPUConfig(interval: .seconds(3), perCore: false, procRoot: "/host/proc"))),
        ])
    }

    @Test func nullValuesKeepDefaults() throws {
        let file = try decode("""
            agent:
            buffer:
              max_bytes: ~
            uplink:
              url: embedded
              token:
            sources:
              - name: cpu
                type: cpu
                interval: null
            """).get()
        #expect(file.buffer.maxBytes == RecordRing.defaultCapacity)
        #expect(file.uplink.token == nil)
        #expect(file.sources.first?.config == SourceConfig(CPUConfig()))
    }

    @Test func quotedScalarsAreAcceptedForTypedValues() throws {
        let file = try decode("""
            uplink: { url: "embedded", heartbeat: "5s" }
            sources: [{ name: "0012", type: 'cpu', per_core: "false" }]
            """).get()
        #expect(file.uplink.heartbeat == .seconds(5))
        #expect(file.sources == [.init(name: "0012", config: SourceConfig(CPUConfig(perCore: false)))])
    }
}
