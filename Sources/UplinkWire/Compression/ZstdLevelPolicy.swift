/// Which zstd level a stream's compressor uses, from how much the stream carries.
///
/// A trickling stream (a box's sensors) sends many small flushes: up to level 12 each costs about what level 3 costs
/// and saves bytes per sample, while above it every flush pays for a deep match search however little it holds. A
/// busy stream needs speed: with our 2^16-entry tables level 1 compresses record lines about a quarter faster than
/// level 3 and a few percent smaller (level 3's double-fast search finds shorter matches that cost more bits). So a
/// trickling stream gets 12 and a busy one 1 (the measurements: docs/configuration.md, `uplink.compression`):
///
/// - a stream starts at `bulkLevel`, so a backlog at start is never compressed slowly;
/// - a pass of `bulkPassBytes` or more switches to `bulkLevel` at once (only busy streams fill such passes);
/// - at the end of each `observation`, the rate over it decides: at most `trickleBytesPerSecond` → `trickleLevel`,
///   more → `bulkLevel`.
struct ZstdLevelPolicy {
    static let bulkLevel: Int32 = 1
    static let trickleLevel: Int32 = 12
    /// Highest rate, in bytes of record lines per second, that counts as trickling.
    static let trickleBytesPerSecond = 16 << 10
    /// A pass at least this large is a busy stream's.
    static let bulkPassBytes = 64 << 10
    static let observation: Duration = .seconds(10)

    private(set) var level = bulkLevel
    private var windowStart: ContinuousClock.Instant
    private var windowBytes = 0

    init(now: ContinuousClock.Instant) {
        windowStart = now
    }

    /// The level for the next pass of `bytes`, at `now`.
    mutating func level(forPass bytes: Int, now: ContinuousClock.Instant) -> Int32 {
        if bytes >= Self.bulkPassBytes {
            level = Self.bulkLevel
            windowStart = now
            windowBytes = 0
            return level
        }
        windowBytes += bytes
        let elapsed = now - windowStart
        if elapsed >= Self.observation {
            let (seconds, attoseconds) = elapsed.components
            let rate = Double(windowBytes) / (Double(seconds) + Double(attoseconds) / 1e18)
            level = rate <= Double(Self.trickleBytesPerSecond) ? Self.trickleLevel : Self.bulkLevel
            windowStart = now
            windowBytes = 0
        }
        return level
    }
}
