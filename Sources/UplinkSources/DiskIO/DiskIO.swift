import UplinkCore

/// The `diskio` source: per-device I/O rates from `<proc_root>/diskstats`.
///
/// On every tick it emits, per selected device (tag `device`), `diskio.read_bytes` and `diskio.write_bytes`
/// (unit `bytes_per_second`, sectors × 512 whatever the device's sector size, as the kernel counts them) and
/// `diskio.reads`, `diskio.writes` (unit `operations_per_second`). The first tick only primes the counters;
/// wraps are followed and a reset skips the device for one interval (see `DeviceRates`).
/// Without the file the source logs one warning and returns; malformed lines are skipped (logged once).
public typealias DiskIOSource = ConfiguredSource<DiskIOConfig>

extension DiskIOConfig {
    /// Whether the configuration selects `device`.
    func selects(_ device: String, filter: NameFilter) -> Bool {
        devices.isEmpty ? DiskIOSource.isWholeDisk(device) : filter.allows(device)
    }

    /// Reads `diskstatsPath` on every tick and emits the rates of the selected devices.
    public func sample(with sensor: PeriodicSensorDriver) async {
        let emitter = sensor.emitter
        let filter = NameFilter(include: devices, exclude: [])
        var tracker = DeviceRates(tag: "device", emitter: emitter)
        await sensor.runReadingFile(diskstatsPath) { bytes, timestamp in
            let stats = DiskIOSource.parse(bytes)
            for device in stats.devices where selects(device.name, filter: filter) {
                tracker.update(device, timestamp: timestamp) { rates, tags in
                    func emit(_ metric: String, _ value: Double, _ unit: String) {
                        emitter.emit(metric, value, unit: unit, tags: tags, tagsAreComplete: true, timestamp: timestamp)
                    }
                    emit("diskio.read_bytes", rates[1] * 512, MetricUnit.bytesPerSecond)
                    emit("diskio.write_bytes", rates[3] * 512, MetricUnit.bytesPerSecond)
                    emit("diskio.reads", rates[0], MetricUnit.operationsPerSecond)
                    emit("diskio.writes", rates[2], MetricUnit.operationsPerSecond)
                }
            }
            tracker.finishSample()
            return stats.malformedLines
        }
    }
}
