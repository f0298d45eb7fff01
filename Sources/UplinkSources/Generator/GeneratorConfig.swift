/// Configuration of a `generator` source, which produces synthetic log records for tests and benchmarks.
///
/// Record `n` (counting from 0) has the message `"gen <source-name> <n zero-padded to 12 digits> "` followed
/// by `x` characters up to `recordBytes` bytes, and the single field `n=<n>`.
public struct GeneratorConfig: SourceKindConfig {
    /// Records per second (YAML key `rate`, a number; fractions allowed). Default: 1000.
    /// A positive rate is paced by elapsed time (small batches about every millisecond, exact in the long
    /// run) and offered with the non-blocking `emit`, so a full buffer drops records and counts the drops.
    /// `0` means as fast as the buffer accepts: records are offered with `emitWaitingForSpace` and nothing is
    /// dropped. Negative, infinite and NaN values behave like `0`.
    public var rate: Double

    /// Size of each record's message in bytes, UTF-8 (YAML key `record_bytes`, an integer). Default: 200.
    /// When smaller than the fixed prefix (`"gen <name> <12 digits> "`), messages are just the prefix.
    public var recordBytes: Int

    /// Number of records after which the source stops and `run` returns (YAML key `count`, an integer).
    /// Default: `nil`, meaning no limit (run until cancelled). `0` or less produces nothing.
    public var count: Int?

    public init(rate: Double = 1000, recordBytes: Int = 200, count: Int? = nil) {
        self.rate = rate
        self.recordBytes = recordBytes
        self.count = count
    }

    /// Whether `rate` asks for pacing (a positive finite number) rather than "as fast as accepted".
    public var isPaced: Bool {
        rate > 0 && rate.isFinite
    }
}
