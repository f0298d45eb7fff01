import UplinkConfig
import UplinkSources

/// `type: generator` (see `GeneratorConfig`), synthetic log records for tests and benchmarks:
/// - `rate` (number ≥ 0, records per second): `0` means as fast as the buffer accepts, nothing dropped.
///   Default `1000`.
/// - `record_bytes` (size, 0 to `1MiB`): size of each record's message. Default `200`.
/// - `count` (integer ≥ 0): stop after this many records. Default: no limit.
extension SourceDecoding {
    static let generatorKeys = ["rate", "record_bytes", "count"]

    /// Largest `record_bytes` accepted: the collector's default `max_line_bytes`.
    static let maximumGeneratorRecordBytes = 1 << 20

    static func decodeGenerator(_ mapping: ConfigMapping) -> GeneratorConfig {
        var config = GeneratorConfig()
        if let rate = mapping.double("rate", .atLeast(0)) { config.rate = rate }
        if let bytes = mapping.size("record_bytes", .between(0, maximumGeneratorRecordBytes)) {
            config.recordBytes = bytes
        }
        if let count = mapping.int("count", .atLeast(0)) { config.count = count }
        return config
    }
}
