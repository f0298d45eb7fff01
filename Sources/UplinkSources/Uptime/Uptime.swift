import UplinkCore

/// The `uptime` source: seconds since boot from `<proc_root>/uptime`, as `uptime.seconds` (unit `seconds`).
///
/// Without the file the source logs one warning and returns; a malformed file is skipped (logged once).
public struct UptimeSource: Source {
    public let name: String
    public let config: UptimeConfig
    /// The clock ticks and timestamps come from (injectable for tests).
    public let clock: any TickClock

    public init(name: String, config: UptimeConfig = UptimeConfig(), clock: any TickClock = SystemTickClock()) {
        self.name = name
        self.config = config
        self.clock = clock
    }

    public func run(context: SourceContext) async throws {
        let sensor = PeriodicSensorDriver(config, source: name, clock: clock, context: context)
        let emitter = sensor.emitter
        let tags = sensor.configuredTags
        await sensor.runReadingFile(config.uptimePath) { bytes, timestamp in
            guard let seconds = Self.parse(bytes) else { return 1 }
            emitter.emit("uptime.seconds", seconds, unit: MetricUnit.seconds, tags: tags, tagsAreComplete: true, timestamp: timestamp)
            return 0
        }
    }
}
