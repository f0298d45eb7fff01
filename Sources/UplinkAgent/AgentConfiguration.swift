import UplinkConfig
import UplinkCore
import UplinkSources
import UplinkTransport

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Everything `uplink run` needs: identity, buffer, uplink and sources.
public struct AgentConfiguration: Sendable {
    /// One configured source.
    public struct NamedSource: Sendable, Equatable {
        /// Unique name (`sources[].name`); it labels every record and metric of the source.
        public var name: String
        /// The kind and its settings.
        public var config: SourceConfig

        public init(name: String, config: SourceConfig) {
            self.name = name
            self.config = config
        }
    }

    /// Size of the circular buffer in bytes. Default 64 MiB.
    public var bufferBytes: Int
    /// What a full buffer does with new records. Default `drop_oldest`.
    public var overflow: OverflowPolicy
    /// Collector address, identity and stream tuning.
    public var uplink: UplinkConfiguration
    /// The sources to run.
    public var sources: [NamedSource]
    /// Where sources keep state across restarts (`agent.state_dir`, default `/var/lib/uplink`): the log
    /// tailer's checkpoints.
    public var stateDirectory: String
    /// `buffer.persist`: the disk side of the buffer; nil (default) keeps it in memory only. Open the agent with
    /// `Agent.open` when it is set.
    public var persistence: PersistentBufferSettings?
    /// `agent.metrics_listen`: where to serve `/metrics`, `/healthz`, `/readyz` and `/v1/status`; nil (default)
    /// serves nothing.
    public var metricsListen: ConfigHostPort?

    public init(
        uplink: UplinkConfiguration,
        sources: [NamedSource],
        bufferBytes: Int = RecordRing.defaultCapacity,
        overflow: OverflowPolicy = .dropOldest,
        stateDirectory: String = "/var/lib/uplink"
    ) {
        self.uplink = uplink
        self.sources = sources
        self.bufferBytes = bufferBytes
        self.overflow = overflow
        self.stateDirectory = stateDirectory
    }

    /// The machine's host name, the default agent id; `"uplink-agent"` if it cannot be read.
    public static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "uplink-agent" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "uplink-agent" : name
    }
}
