/// Which zstd level a stream's compressor uses, from how much the stream carries.
///
/// Measured with `uplink-bench wire` (a 2-core box's cpu, memory, load, network, diskio and disk sensors at 1 s, about
/// 8 KiB/s of record lines in a few passes per second; and 240-byte access-log lines): level 3 gives 11 bytes per
/// metric sample and costs 1.6 CPU-ms per MiB; level 19 gives 6.7 bytes per sample and 25 instead of 35 bytes per log
/// line, but costs 206 CPU-ms per MiB. So a trickling stream gets 19 (at 16 KiB/s at most that is 3 ms of CPU per
/// second) and a busy one 3:
///
/// - a stream starts at `bulkLevel`, so a backlog at start is never compressed slowly;
/// - a pass of `bulkPassBytes` or more switches to `bulkLevel` at once (only busy streams fill such passes);
/// - at the end of each `observation`, the rate over it decides: at most `trickleBytesPerSecond` → `trickleLevel`,
///   more → `bulkLevel`.
struct ZstdLevelPolicy {
    static let bulkLevel: Int32 = 3
    static let trickleLevel: Int32 = 19
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
