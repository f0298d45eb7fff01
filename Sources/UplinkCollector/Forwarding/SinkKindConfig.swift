import AsyncHTTPClient
import Logging
import UplinkConfig

/// A kind of sink (`collector.sinks[].type`): its name, its keys (documented, decoded and checked in one place) and
/// how it makes the sink. Each kind is one folder, `Sources/UplinkCollector/Sinks/<Kind>/`, with a type conforming
/// to this protocol and the `ForwardingSink` it makes, and one line in `SinkRegistry.kinds`. The keys every sink
/// has (`name`, `type`, batching, backoff, timeout) are `SinkConfiguration`'s; docs/configuration.md and
/// examples.yaml show each kind from these requirements (`SinkDocumentation`, checked by a test).
public protocol SinkKindConfig: Sendable {
    /// The kind's name in the configuration (`type: jsonl`).
    static var typeName: String { get }

    /// Markdown under the kind's heading in docs/configuration.md: what the sink does with records.
    static var summary: String { get }

    /// The kind's own keys besides those every sink has, in the order of its table in docs/configuration.md.
    static var keys: [DocumentedKey] { get }

    /// The kind's item in the `collector.sinks` example of examples.yaml, as YAML lines for a list item (starting
    /// with `- name: …`, no indentation); mention every key. It must decode without issues.
    static var example: String { get }

    /// Reads the kind's keys of a sink's mapping (`name`, `type` and the common keys were read, and unknown keys
    /// reported, by the caller), reporting each problem to `mapping.decoder`; nil when a required key is missing or
    /// unusable.
    static func decode(_ mapping: ConfigMapping) -> Self?

    /// What is wrong with this configuration when it was built in code rather than decoded (the decoder reports
    /// the same problems at their line), or nil.
    func problem() -> String?

    /// The sink, delivering as this configuration says.
    func makeSink(_ context: SinkContext) throws -> any ForwardingSink

    /// Whether `other` is of the same kind with the same settings.
    func isEqual(to other: any SinkKindConfig) -> Bool
}

extension SinkKindConfig where Self: Equatable {
    public func isEqual(to other: any SinkKindConfig) -> Bool { (other as? Self) == self }
}

extension SinkKindConfig {
    public func problem() -> String? { nil }

    /// `decode`, as an existential: what the `collector.sinks` decoder calls on a kind it looked up by name.
    static func decodeSettings(_ mapping: ConfigMapping) -> (any SinkKindConfig)? { decode(mapping) }

    /// The kind's name (`Self.typeName`) of a value.
    public var typeName: String { Self.typeName }

    /// The keys allowed in the kind's mapping besides the common ones: the first part of every key in `keys`.
    static var allowedKeys: [String] {
        GeneratedDocumentation.topLevelNames(keys)
    }
}

/// What a sink kind may use to make its sink.
public struct SinkContext: Sendable {
    /// The sink's `timeout`: longest a delivery request may take.
    public var timeout: Duration
    /// The collector's configuration (its data directory, for a kind's default paths).
    public var collector: CollectorConfiguration
    /// Where standard output goes (`Collector`'s `output`).
    public var output: any CollectorOutput
    /// The collector's HTTP client for sinks that deliver over HTTP.
    public var client: HTTPClient
    /// The collector's logger.
    public var logger: Logger
}
