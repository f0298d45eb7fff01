import UplinkCore

/// The `cpu` source: CPU time percentages from `<proc_root>/stat`, total and per core.
///
/// On every tick (see `CPUConfig.interval`) it reads the file and emits `cpu.user`, `cpu.system`, `cpu.idle`,
/// `cpu.iowait` and `cpu.steal` (unit `percent`, adding up to 100) over the interval since the previous read,
/// tagged `cpu=total` and, with `perCore`, `cpu=<n>` per core, followed by the configured `tags`. The first tick only primes the counters.
///
/// - `user` includes `nice`; `system` includes `irq` and `softirq`; guest time is already part of user time
///   in `/proc/stat` and is not counted twice.
/// - A CPU whose counters went backwards (a core that was offline, a counter reset) is skipped for that
///   interval instead of reporting negative or > 100 values; an offline core simply has no series.
/// - Without the file (a container without `/proc`) the source logs one warning and returns.
/// - Malformed lines are skipped (and logged once); the rest of the file is still used.
public typealias CPUSource = ConfiguredSource<CPUConfig>

extension CPUConfig {
    /// Reads `statPath` on every tick and emits the percentages of the total and, with `perCore`, of every core.
    public func sample(with sensor: PeriodicSensorDriver) async {
        var sampler = CPUSource.Sampler(perCore: perCore)
        var tags = CPUSource.TagCache()
        let emitter = sensor.emitter
        await sensor.runReadingFile(statPath) { bytes, timestamp in
            return sampler.ingest(bytes) { cpu, percentages in
                let cpuTags = tags.tags(for: cpu, adding: emitter)
                func emit(_ metric: String, _ value: Double) {
                    emitter.emit(metric, value, unit: MetricUnit.percent, tags: cpuTags, tagsAreComplete: true, timestamp: timestamp)
                }
                emit("cpu.user", percentages.user)
                emit("cpu.system", percentages.system)
                emit("cpu.idle", percentages.idle)
                emit("cpu.iowait", percentages.iowait)
                emit("cpu.steal", percentages.steal)
            }
        }
    }
}

extension CPUSource {
    /// The `cpu=…` tag arrays (with the configured tags), built once per CPU and shared by all its records.
    struct TagCache {
        private var total: [Tag]?
        private var cores: [[Tag]] = []

        mutating func tags(for cpu: CPUIdentity, adding emitter: MetricEmitter) -> [Tag] {
            switch cpu {
            case .total:
                if let total { return total }
                let built = emitter.tags([Tag("cpu", "total")])
                total = built
                return built
            case .core(let index):
                while cores.count <= index {
                    cores.append(emitter.tags([Tag("cpu", String(cores.count))]))
                }
                return cores[index]
            }
        }
    }
}
