import UplinkCore

/// The `network` source: per-interface traffic rates from `<proc_root>/net/dev`.
///
/// On every tick (see `NetworkConfig.interval`) it emits, per interface passing `include`/`exclude` (tag
/// `interface`), bytes per second and packets, errors and drops per second, received and transmitted
/// (`network.rx_bytes`, `network.tx_packets`, …). The first tick only primes the counters; counter wraps
/// (32- and 64-bit) are followed, a counter reset skips that interface for one interval.
/// Without the file the source logs one warning and returns; malformed lines are skipped (logged once).
public typealias NetworkSource = ConfiguredSource<NetworkConfig>

extension NetworkConfig {
    /// Reads `netDevPath` on every tick and emits the rates of the interfaces `include` and `exclude` select.
    public func sample(with sensor: PeriodicSensorDriver) async {
        let filter = NameFilter(include: include, exclude: exclude)
        let metrics = NetworkSource.metrics
        var tracker = DeviceRates(tag: "interface", emitter: sensor.emitter)
        await sensor.runReadingFile(netDevPath) { bytes, timestamp in
            let counters = NetworkSource.parse(bytes)
            for interface in counters.devices where filter.allows(interface.name) {
                tracker.update(interface, timestamp: timestamp) { rates, tags in
                    for (index, metric) in metrics.enumerated() {
                        sensor.emitter.emit(
                            metric.name, rates[index], unit: metric.unit, tags: tags, tagsAreComplete: true, timestamp: timestamp)
                    }
                }
            }
            tracker.finishSample()
            return counters.malformedLines
        }
    }
}
