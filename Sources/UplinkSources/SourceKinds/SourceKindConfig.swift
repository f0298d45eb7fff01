import UplinkConfig
import UplinkCore

/// The configuration type of one source kind, which is also the kind's definition: its `type:` name, its keys with
/// their descriptions and defaults, their decoding, its documentation and its example block, and the source it
/// builds. Each kind conforms in its own folder (`<Kind>/<Kind>Config+Kind.swift`) and is named on one line of
/// `SourceKind.allCases` (Registry.swift), like a Telegraf plugin or a Fluent Bit `config_map`.
///
/// docs/configuration.md and examples.yaml hold what `SourceKindDocumentation` assembles from these; a test fails
/// when they are stale, when an example does not decode, or when a documented key is not read by `decode`.
public protocol SourceKindConfig: Sendable, Equatable {
    /// The kind's name in the configuration (`type: cpu`).
    static var typeName: String { get }

    /// Markdown under the kind's heading in docs/configuration.md: what the source reads and reports, and how.
    static var summary: String { get }

    /// Every key the kind accepts besides `name` and `type`, in the order of its table in docs/configuration.md and
    /// of the "allowed keys" hint. Sensors start with `SensorSchedule.keys`. A key of a nested mapping is written
    /// with a dot (`multiline.timeout`); its first part is the key allowed in the source's mapping.
    static var keys: [SourceKey] { get }

    /// The kind's item in the `sources` list of examples.yaml: YAML indented by two spaces, starting with a comment
    /// line, mentioning every key (commented out where it should not take effect). It must decode without issues.
    static var example: String { get }

    /// The configuration with every key at its default.
    static var defaults: Self { get }

    /// Reads every key of a source's mapping (its `name` and `type` were read, and unknown keys reported, by the
    /// caller), reporting each problem to `mapping.decoder`; keys that are absent or unusable keep their defaults.
    static func decode(_ mapping: ConfigMapping) -> Self

    /// The source this configuration describes (a `ConfiguredSource` for every `RunnableSourceKindConfig`).
    /// - Parameters:
    ///   - name: The source's unique name (`sources[].name`).
    ///   - clock: The clock a sensor ticks by (kinds that do not tick ignore it).
    func makeSource(name: String, clock: any TickClock) -> any Source

    /// Whether the agent runs the kind's sources on the send path's event loop (the thread the uplink writes the
    /// stream on) instead of Swift's global executor: what such a source appends is then written out without waking
    /// another thread. Only for kinds that never block that thread (no waits on processes, devices or slow file
    /// systems; their `fsync`s go to a thread pool). Default false.
    static var runsOnSendPathLoop: Bool { get }
}

extension SourceKindConfig {
    /// This configuration type's kind.
    public static var kind: SourceKind { SourceKind(Self.self) }

    public static var runsOnSendPathLoop: Bool { false }

    /// The keys allowed in a source's mapping besides `name` and `type`: the first part of every key in `keys`, in
    /// order, each once.
    public static var allowedKeys: [String] {
        var allowed: [String] = []
        for key in keys {
            let topLevel = key.topLevelName
            if !allowed.contains(topLevel) { allowed.append(topLevel) }
        }
        return allowed
    }

    /// Whether `other` is a configuration of the same kind with the same settings.
    func isEqual(to other: any SourceKindConfig) -> Bool {
        (other as? Self) == self
    }
}

/// One key of a source kind, as docs/configuration.md lists it (Fluent Bit's `config_map` entry): the same row the
/// sink kinds use.
public typealias SourceKey = DocumentedKey
