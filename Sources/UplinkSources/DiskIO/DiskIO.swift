import UplinkCore

/// The `diskio` source: per-device I/O rates from `<proc_root>/diskstats`.
///
/// On every tick it emits, per selected device (tag `device`), `diskio.read_bytes` and `diskio.write_bytes`
/// (unit `bytes_per_second`, sectors × 512 whatever the device's sector size, as the kernel counts them) and
/// `diskio.reads`, `diskio.writes` (unit `operations_per_second`). The first tick only primes the counters;
/// wraps are followed and a reset skips the device for one interval (see `NetworkSource.RateTracker`).
/// Without the file the source logs one warning and returns; malformed lines are skipped (logged once).
public struct DiskIOSource: Source {
    public let name: String
    public let config: DiskIOConfig
    /// The clock ticks and timestamps come from (injectable for tests).
    public let clock: any TickClock

    public init(name: String, config: DiskIOConfig = DiskIOConfig(), clock: any TickClock = SystemTickClock()) {
        self.name = name
        self.config = config
        self.clock = clock
    }

    /// Whether the configuration selects `device`.
    func selects(_ device: String, filter: NameFilter) -> Bool {
        config.devices.isEmpty ? Self.isWholeDisk(device) : filter.allows(device)
    }

    public func run(context: SourceContext) async throws {
        let sensor = PeriodicSensorDriver(config, source: name, clock: clock, context: context)
        let emitter = sensor.emitter
        let filter = NameFilter(include: config.devices, exclude: [])
        var tracker = NetworkSource.RateTracker()
        var tagCache: [String: [Tag]] = [:]
        await sensor.runReadingFile(config.diskstatsPath) { bytes, timestamp in
            let stats = Self.parse(bytes)
            var seen = Set<String>()
            for device in stats.devices where selects(device.name, filter: filter) {
                seen.insert(device.name)
                guard let rates = tracker.update(device.name, values: device.values, timestamp: timestamp) else { continue }
                let tags: [Tag]
                if let cached = tagCache[device.name] {
                    tags = cached
                } else {
                    tags = emitter.tags([Tag("device", device.name)])
                    tagCache[device.name] = tags
                }
                func emit(_ metric: String, _ value: Double, _ unit: String) {
                    emitter.emit(metric, value, unit: unit, tags: tags, tagsAreComplete: true, timestamp: timestamp)
                }
                emit("diskio.read_bytes", rates[1] * 512, MetricUnit.bytesPerSecond)
                emit("diskio.write_bytes", rates[3] * 512, MetricUnit.bytesPerSecond)
                emit("diskio.reads", rates[0], MetricUnit.operationsPerSecond)
                emit("diskio.writes", rates[2], MetricUnit.operationsPerSecond)
            }
            tracker.retain(seen)
            if tagCache.count > seen.count {
                // Devices come and go (veth pairs of containers): keep only the current ones' tags.
                tagCache = tagCache.filter { seen.contains($0.key) }
            }
            return stats.malformedLines
        }
    }
}
