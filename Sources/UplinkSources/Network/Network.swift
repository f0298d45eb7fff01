import UplinkCore

/// The `network` source: per-interface traffic rates from `<proc_root>/net/dev`.
///
/// On every tick (see `NetworkConfig.interval`) it emits, per interface passing `include`/`exclude` (tag
/// `interface`), bytes per second and packets, errors and drops per second, received and transmitted
/// (`network.rx_bytes`, `network.tx_packets`, …). The first tick only primes the counters; counter wraps
/// (32- and 64-bit) are followed, a counter reset skips that interface for one interval.
/// Without the file the source logs one warning and returns; malformed lines are skipped (logged once).
public struct NetworkSource: Source {
    public let name: String
    public let config: NetworkConfig
    /// The clock ticks and timestamps come from (injectable for tests).
    public let clock: any TickClock

    public init(name: String, config: NetworkConfig = NetworkConfig(), clock: any TickClock = SystemTickClock()) {
        self.name = name
        self.config = config
        self.clock = clock
    }

    public func run(context: SourceContext) async throws {
        let sensor = PeriodicSensorDriver(config, source: name, clock: clock, context: context)
        let emitter = sensor.emitter
        let filter = NameFilter(include: config.include, exclude: config.exclude)
        var tracker = RateTracker()
        var tagCache: [String: [Tag]] = [:]
        await sensor.runReadingFile(config.netDevPath) { bytes, timestamp in
            let netDev = Self.parse(bytes)
            var seen = Set<String>()
            for interface in netDev.interfaces where filter.allows(interface.name) {
                seen.insert(interface.name)
                guard let rates = tracker.update(interface.name, values: interface.values, timestamp: timestamp) else {
                    continue
                }
                let tags: [Tag]
                if let cached = tagCache[interface.name] {
                    tags = cached
                } else {
                    tags = emitter.tags([Tag("interface", interface.name)])
                    tagCache[interface.name] = tags
                }
                for (index, metric) in Self.metrics.enumerated() {
                    emitter.emit(metric.name, rates[index], unit: metric.unit, tags: tags, tagsAreComplete: true, timestamp: timestamp)
                }
            }
            tracker.retain(seen)
            if tagCache.count > seen.count {
                // Devices come and go (veth pairs of containers): keep only the current ones' tags.
                tagCache = tagCache.filter { seen.contains($0.key) }
            }
            return netDev.malformedLines
        }
    }
}
