/// Which zstd level a stream's compressor uses, from how much the stream carries.
///
/// Measured with `deploy/sensor-rate.sh` (a 2-core box's cpu, memory, load, network, diskio and disk sensors at 1 s:
/// 64 samples/s, about 8 KiB/s of record lines in small passes; the agent's CPU over 30 s for each trickle level,
/// one session): level 3 gave 9.6 bytes per sample, 6 gave 8.0, 9 7.8, 12 7.6, 15 7.4 and 19 6.9; the agent used
/// 0.17 % of a core up to level 12, 0.20 % at 15 and 0.67 % at 19 (with `compression: none`, 0.13 %). Each small
/// flush at 19 pays for its deep match search however little it holds. So a trickling stream gets 12 and a busy one 3
/// (1.6 CPU-ms per MiB, `uplink-bench wire`):
///
/// - a stream starts at `bulkLevel`, so a backlog at start is never compressed slowly;
/// - a pass of `bulkPassBytes` or more switches to `bulkLevel` at once (only busy streams fill such passes);
/// - at the end of each `observation`, the rate over it decides: at most `trickleBytesPerSecond` → `trickleLevel`,
///   more → `bulkLevel`.
struct ZstdLevelPolicy {
    static let bulkLevel: Int32 = 3
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
