import UplinkCore

/// The `load` source: the load averages from `<proc_root>/loadavg`.
///
/// On every tick (see `LoadConfig.interval`) it emits `load.1m`, `load.5m`, `load.15m` (no unit).
/// Without the file the source logs one warning and returns; a malformed file is skipped (logged once).
public struct LoadSource: Source {
    public let name: String
    public let config: LoadConfig
    /// The clock ticks and timestamps come from (injectable for tests).
    public let clock: any TickClock

    public init(name: String, config: LoadConfig = LoadConfig(), clock: any TickClock = SystemTickClock()) {
        self.name = name
        self.config = config
        self.clock = clock
    }

    public func run(context: SourceContext) async throws {
        let sensor = PeriodicSensorDriver(config, source: name, clock: clock, context: context)
        let emitter = sensor.emitter
        let tags = sensor.configuredTags
        await sensor.runReadingFile(config.loadavgPath) { bytes, timestamp in
            guard let load = Self.parse(bytes) else { return 1 }
            emitter.emit("load.1m", load.oneMinute, unit: "", tags: tags, tagsAreComplete: true, timestamp: timestamp)
            emitter.emit("load.5m", load.fiveMinutes, unit: "", tags: tags, tagsAreComplete: true, timestamp: timestamp)
            emitter.emit("load.15m", load.fifteenMinutes, unit: "", tags: tags, tagsAreComplete: true, timestamp: timestamp)
            return 0
        }
    }
}
