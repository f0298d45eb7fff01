import UplinkCore

/// The `sysfs` source: one numeric value read from `path` on every tick, emitted as `metric` = raw × `scale` +
/// `offset` in `unit`.
///
/// Without the file the source logs one warning and returns. A file whose content is not a number is skipped
/// for that tick (logged once as a malformed line).
public struct SysfsSource: Source {
    public let name: String
    public let config: SysfsConfig
    /// The clock ticks and timestamps come from (injectable for tests).
    public let clock: any TickClock

    public init(name: String, config: SysfsConfig = SysfsConfig(), clock: any TickClock = SystemTickClock()) {
        self.name = name
        self.config = config
        self.clock = clock
    }

    /// `raw × scale + offset`.
    static func value(_ bytes: UnsafeBufferPointer<UInt8>, scale: Double, offset: Double) -> Double? {
        ByteParsing.parseDouble(bytes, ByteParsing.trimmed(bytes, 0..<bytes.count)).map { $0 * scale + offset }
    }

    public func run(context: SourceContext) async throws {
        let sensor = PeriodicSensorDriver(config, source: name, clock: clock, context: context)
        let emitter = sensor.emitter
        let tags = sensor.configuredTags
        let (metric, unit, scale, offset) = (config.metric, config.unit, config.scale, config.offset)
        await sensor.runReadingFile(config.path, missingHint: "no such sensor on this machine, or a wrong path?") { bytes, timestamp in
            guard let value = Self.value(bytes, scale: scale, offset: offset) else { return 1 }
            emitter.emit(metric, value, unit: unit, tags: tags, tagsAreComplete: true, timestamp: timestamp)
            return 0
        }
    }
}
