import Logging
import UplinkCore

/// The `memory` source: RAM and swap usage from `<proc_root>/meminfo`.
///
/// On every tick (see `MemoryConfig.interval`) it reads the file and emits, tagged only with the configured `tags`:
/// `memory.total`, `memory.available`, `memory.used` (= total − available), `memory.swap_total`,
/// `memory.swap_free`, `memory.swap_used` in unit `bytes`, and `memory.used_percent` in unit `percent`.
///
/// - `kB` in meminfo means KiB (1024 bytes).
/// - When `MemAvailable` is missing (kernels before 3.14) available memory is estimated as
///   `MemFree + Buffers + Cached`.
/// - Without the file (a container without `/proc`) the source logs one warning and returns.
/// - Malformed lines are skipped (and logged once); the rest of the file is still used. If the fields needed
///   for the RAM (or swap) figures are missing, those metrics are left out and one warning is logged.
public typealias MemorySource = ConfiguredSource<MemoryConfig>

extension MemoryKind {
    /// Reads `config.meminfoPath` on every tick and emits the RAM and swap figures it has.
    public static func sample(_ config: MemoryConfig, with sensor: PeriodicSensorDriver) async {
        let emitter = sensor.emitter
        let logger = sensor.logger
        let path = config.meminfoPath
        var warnedAboutMissingFields = false
        await sensor.runReadingFile(path) { bytes, timestamp in
            let meminfo = MemorySource.MeminfoParser.parse(bytes)
            let readings = MemorySource.Readings(meminfo)
            func emit(_ metric: String, _ value: Double, _ unit: String) {
                emitter.emit(metric, value, unit: unit, timestamp: timestamp)
            }
            if let memory = readings.memory {
                emit("memory.total", Double(memory.total), "bytes")
                emit("memory.available", Double(memory.available), "bytes")
                emit("memory.used", Double(memory.used), "bytes")
                if let percent = memory.usedPercent {
                    emit("memory.used_percent", percent, "percent")
                }
            }
            if let swap = readings.swap {
                emit("memory.swap_total", Double(swap.total), "bytes")
                emit("memory.swap_free", Double(swap.free), "bytes")
                emit("memory.swap_used", Double(swap.used), "bytes")
            }
            if readings.memory == nil || readings.swap == nil, !warnedAboutMissingFields {
                warnedAboutMissingFields = true
                var missingFields: [String] = []
                if readings.memory == nil { missingFields.append("MemTotal (or both MemAvailable and MemFree)") }
                if readings.swap == nil { missingFields.append("SwapTotal or SwapFree") }
                let missing = missingFields.joined(separator: ", and no ")
                logger.warning(
                    "memory source: \(path) has no \(missing); the metrics derived from it are not reported",
                    metadata: ["path": "\(path)"]
                )
            }
            return meminfo.malformedLines
        }
    }
}
