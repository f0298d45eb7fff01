import UplinkCore

/// A source kind whose source is nothing but its configuration run under a name on a clock: `makeSource` builds a
/// `ConfiguredSource`, and that source's `run(context:)` is the configuration's `run(source:clock:context:)`. Every
/// sensor (through `PeriodicSensorConfig`) and both log readers are such kinds; `generator` builds a source of its
/// own.
public protocol RunnableSourceKindConfig: SourceKindConfig {
    /// Produces the records of the source `name` into `context.sink` until cancelled: `Source.run(context:)` of the
    /// source this configuration describes.
    /// - Parameters:
    ///   - name: The source's unique name (`sources[].name`).
    ///   - clock: What the source ticks, times out and timestamps by.
    ///   - context: Where records go, the source's logger and its state directory.
    func run(source name: String, clock: any TickClock, context: SourceContext) async throws
}

extension RunnableSourceKindConfig {
    /// A `ConfiguredSource` of this configuration.
    public func makeSource(name: String, clock: any TickClock) -> any Source {
        ConfiguredSource(name: name, config: self, clock: clock)
    }
}

/// One source of a kind whose configuration does the work (`RunnableSourceKindConfig`): the configuration, the
/// source's name and the clock it runs on. Each such kind names it `<Kind>Source` (`LoadSource`, `TailSource`, …).
public struct ConfiguredSource<Config: RunnableSourceKindConfig>: Source {
    /// The source's unique name (`sources[].name`).
    public let name: String
    /// What the source reads and how.
    public let config: Config
    /// The clock ticks, timeouts and timestamps come from (injectable for tests).
    public let clock: any TickClock

    /// The source `name` of `config` (by default the kind's defaults), running on `clock`.
    public init(name: String, config: Config = .defaults, clock: any TickClock = SystemTickClock()) {
        self.name = name
        self.config = config
        self.clock = clock
    }

    /// Runs the configuration (`Config.run(source:clock:context:)`) until cancelled.
    public func run(context: SourceContext) async throws {
        try await config.run(source: name, clock: clock, context: context)
    }
}
