import UplinkCore

// The one place that lists every source kind. Adding a kind means: a folder `<Kind>/` with `<Kind>.swift`,
// `<Kind>Config.swift` and `<Kind>+<Concern>.swift` files, a case in `SourceKind`, a case in `SourceConfig`,
// and a line in each `switch` below (the compiler points at every one of them).

/// Every kind of source the agent can run, named as in the configuration (`sources[].type`).
public enum SourceKind: String, Sendable, Equatable, Hashable, CaseIterable {
    /// CPU time percentages from `/proc/stat` (`CPUSource`, `CPUConfig`).
    case cpu = "cpu"
    /// RAM and swap usage from `/proc/meminfo` (`MemorySource`, `MemoryConfig`).
    case memory = "memory"
    /// Synthetic log records for tests and benchmarks (`GeneratorSource`, `GeneratorConfig`).
    case generator = "generator"

    /// The name of the kind in the configuration (`type: cpu`).
    public var typeName: String { rawValue }

    /// The kind with the given configuration name, or `nil` for an unknown name.
    public init?(typeName: String) {
        self.init(rawValue: typeName)
    }

    /// The configuration of this kind with every setting at its default.
    public var defaultConfig: SourceConfig {
        switch self {
        case .cpu: .cpu(CPUConfig())
        case .memory: .memory(MemoryConfig())
        case .generator: .generator(GeneratorConfig())
        }
    }
}

/// The typed configuration of one source, one case per `SourceKind`.
public enum SourceConfig: Sendable, Equatable {
    case cpu(CPUConfig)
    case memory(MemoryConfig)
    case generator(GeneratorConfig)

    /// The kind this configuration is for.
    public var kind: SourceKind {
        switch self {
        case .cpu: .cpu
        case .memory: .memory
        case .generator: .generator
        }
    }
}

/// Builds the source a configuration describes.
/// - Parameters:
///   - name: The source's unique name within the agent (`sources[].name`).
///   - config: Its typed configuration.
///   - clock: The clock interval-driven sensors (cpu, memory) tick by; the real clock unless a test injects one.
public func makeSource(name: String, config: SourceConfig, clock: any TickClock = SystemTickClock()) -> any Source {
    switch config {
    case .cpu(let cpu): CPUSource(name: name, config: cpu, clock: clock)
    case .memory(let memory): MemorySource(name: name, config: memory, clock: clock)
    case .generator(let generator): GeneratorSource(name: name, config: generator)
    }
}
