import Foundation
import Testing
import UplinkAgent
import UplinkCollector
import UplinkConfig
import UplinkCore
import UplinkSources
import UplinkTransport

/// `examples.yaml` documents every key; loading it here keeps it in step with the code.
@Suite("examples.yaml")
struct ExamplesTests {
    let path = repositoryRoot + "/examples.yaml"

    @Test func isValidAndMapsToTheExpectedAgentConfiguration() throws {
        let (result, collector) = loadWithCollector(path: path, environment: [:])
        #expect(result.issues.map(\.description) == [])
        let file = try result.get()

        #expect(file.configuresAgent)
        #expect(file.agent == UplinkFile.AgentSection(id: "example-agent", stateDirectory: "./uplink-state"))
        #expect(file.uplink.target == .embedded)
        #expect(collector == CollectorConfiguration())

        let configuration = file.agentConfiguration(embedded: EmbeddedCollectorTarget(url: "http://127.0.0.1:40001", token: nil))
        #expect(configuration.uplink.url == "http://127.0.0.1:40001")
        #expect(configuration.uplink.agentID == "example-agent")
        #expect(configuration.uplink.token == nil)
        #expect(configuration.uplink.backoff == Backoff())
        #expect(configuration.uplink.heartbeatInterval == .seconds(15))
        #expect(configuration.uplink.stallTimeout == .seconds(30))
        #expect(configuration.uplink.connectTimeout == .seconds(5))
        #expect(configuration.uplink.streamBufferBytes == 64 * 1024)
        #expect(configuration.uplink.drainTimeout == .seconds(5))
        #expect(configuration.bufferBytes == 64 * 1024 * 1024)
        #expect(configuration.overflow == .dropOldest)
        #expect(configuration.stateDirectory == "./uplink-state")
        var appLog = TailConfig()
        // Relative patterns are taken from the working directory.
        let workingDirectory = FileManager.default.currentDirectoryPath
        appLog.paths = [workingDirectory + "/quickstart.log"]
        appLog.exclude = [workingDirectory + "/*.gz"]
        appLog.startAt = .beginning
        var journal = JournaldConfig()
        journal.priority = .warning
        #expect(configuration.sources == [
            .init(
                name: "cpu",
                config: SourceConfig(CPUConfig(interval: .seconds(2), tags: [Tag("role", "gateway")], perCore: true, procRoot: "/proc"))),
            .init(name: "memory", config: SourceConfig(MemoryConfig(interval: .seconds(2), procRoot: "/proc"))),
            // examples.yaml lists the kinds in the registry's order (SourceKindDocumentation.examples).
            .init(name: "generator", config: SourceConfig(GeneratorConfig(rate: 1, recordBytes: 200, count: nil))),
            .init(name: "load", config: SourceConfig(LoadConfig(tags: [Tag("role", "gateway")]))),
            .init(name: "uptime", config: SourceConfig(UptimeConfig(interval: .seconds(60)))),
            .init(name: "network", config: SourceConfig(NetworkConfig(include: [], exclude: ["lo"]))),
            .init(name: "diskio", config: SourceConfig(DiskIOConfig())),
            .init(name: "disk", config: SourceConfig(DiskConfig(interval: .seconds(60), mountPoints: ["/"]))),
            .init(name: "thermal", config: SourceConfig(ThermalConfig())),
            .init(name: "hwmon", config: SourceConfig(HwmonConfig())),
            .init(name: "power", config: SourceConfig(PowerConfig(interval: .seconds(30)))),
            .init(name: "board-temperature", config: SourceConfig(SysfsConfig(
                path: "/sys/class/thermal/thermal_zone0/temp", scale: 0.001, metric: "board.temperature", unit: "celsius"))),
            .init(name: "script", config: SourceConfig(ExecConfig(
                interval: .seconds(30),
                command: ["sh", "-c", #"echo "$(date -u +%FT%TZ) INFO queue checked" >> quickstart.log; echo queue_depth=0 workers=4"#],
                format: .keyvalue, prefix: "app", unit: "count"))),
            .init(name: "app-log", config: SourceConfig(appLog)),
            .init(name: "journal", config: SourceConfig(journal)),
        ])
    }

    @Test func hasABlockForEverySourceKind() throws {
        let file = try load(path: path, environment: [:]).get()
        #expect(Set(file.sources.map(\.config.kind)) == Set(SourceKind.allCases))
    }

    @Test func environmentOverridesTheAgentID() throws {
        let file = try load(path: path, environment: ["UPLINK_AGENT_ID": "from-env"]).get()
        #expect(file.agent.id == "from-env")
    }

    /// Every key the decoder accepts appears in examples.yaml (written or commented out), so the example documents
    /// them all.
    @Test func mentionsEveryKey() throws {
        let text = String(decoding: try ConfigFiles.read(path: path, limit: 1 << 20).get(), as: UTF8.self)
        let keys = [
            "agent:", "id:", "state_dir:", "metrics_listen:", "buffer:", "max_bytes:", "overflow:", "uplink:", "url:", "token:",
            "token_file:", "backoff:", "initial:", "multiplier:", "max:", "reset_after:", "heartbeat:",
            "stall_timeout:", "connect_timeout:", "stream_buffer:", "drain_timeout:", "sources:", "name:", "type:", "interval:",
            "per_core:", "proc_root:", "jitter:", "tags:", "include:", "exclude:", "devices:", "mount_points:",
            "sys_root:", "path:", "scale:", "offset:", "metric:", "unit:", "command:", "timeout:", "format:", "prefix:", "rate:", "record_bytes:", "count:", "collector:", "listen:", "data_dir:",
            "stdout:", "jsonl:", "max_line_bytes:", "fsync:", "rejects_file:",
            // collector sinks (UplinkFile+CollectorSinks.swift)
            "sinks:", "batch_max_bytes:", "batch_linger:", "headers:", "database:", "table:", "metrics_table:", "user:",
            "password_file:", "create_table:", "log:", "segment_bytes:", "segment_age:", "retention:", "max_age:",
            // journald
            "units:", "matches:", "priority:", "since:", "directory:", "checkpoint_interval:",
        ]
        for key in keys {
            #expect(text.contains(key), "examples.yaml does not mention \(key)")
        }
    }
}
