import UplinkConfig
import UplinkCore

/// `type: generator`: its keys, decoding, documentation and example.
extension GeneratorConfig {
    public static let typeName = "generator"

    public static var defaults: GeneratorConfig { GeneratorConfig() }

    /// Largest `record_bytes` accepted: the collector's default `max_line_bytes`.
    public static let maximumRecordBytes = 1 << 20

    public static let summary = """
        Synthetic log records, for trying things out and for benchmarks.
        """

    public static let keys = [
        SourceKey(
            "rate", "number, ≥ 0", default: "`1000`",
            "Records per second (fractions allowed). `0` means as fast as the buffer accepts; then nothing is dropped."),
        SourceKey("record_bytes", "size, 0 to `1MiB`", default: "`200`", "Size of each record's message."),
        SourceKey("count", "integer, ≥ 0", default: "no limit", "Stop after this many records."),
    ]

    public static let example = """
          # Synthetic log records, for trying things out and for benchmarks.
          - name: generator
            type: generator
            rate: 1               # records per second (≥ 0; 0 = as fast as the buffer accepts). Default: 1000.
            record_bytes: 200     # size of each message (0 to 1MiB). Default: 200.
            # count: 100          # stop after this many records. Default: no limit.
        """

    public static func decode(_ mapping: ConfigMapping) -> GeneratorConfig {
        var config = GeneratorConfig()
        if let rate = mapping.double("rate", .atLeast(0)) { config.rate = rate }
        if let bytes = mapping.size("record_bytes", .between(0, maximumRecordBytes)) { config.recordBytes = bytes }
        if let count = mapping.int("count", .atLeast(0)) { config.count = count }
        return config
    }

    /// The generator paces itself by the continuous clock, so `clock` is not used.
    public func makeSource(name: String, clock: any TickClock) -> any Source {
        GeneratorSource(name: name, config: self)
    }
}
