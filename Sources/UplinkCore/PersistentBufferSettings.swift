/// `buffer.persist`: where and how the circular buffer keeps its records on disk, so that a restart or a long outage
/// loses nothing buffered (docs/configuration.md, "buffer.persist").
public struct PersistentBufferSettings: Sendable, Equatable {
    /// When records are written to disk.
    public enum Mode: String, Sendable, CaseIterable {
        /// Records stay in memory while the uplink keeps up. They go to disk when the memory buffer would otherwise
        /// drop them, when they have waited unacknowledged for `spillAfter`, and at shutdown. A healthy agent writes
        /// nothing.
        case spill
        /// Every record is written to disk before it counts as buffered, flushed with `fsync` at most every
        /// `syncInterval` (group commit): for boxes that lose power without warning.
        case always
    }

    /// Directory of the segment files and the `state` file. Default `<agent.state_dir>/buffer`.
    public var directory: String
    /// Disk budget in bytes, segment files together. Default 256 MiB; at least 1 MiB and at least the memory buffer.
    public var maxBytes: Int
    /// Default `.spill`.
    public var mode: Mode
    /// `always` mode: how often written records are flushed to the device. Default 1 s.
    public var syncInterval: Duration
    /// `spill` mode: records unacknowledged this long (up to twice this long) are written to disk. Default 10 s.
    public var spillAfter: Duration
    /// What a full disk budget does: drop the oldest records on disk (counted) or refuse new ones
    /// (`buffer.overflow`). Default `.dropOldest`.
    public var overflow: OverflowPolicy

    public init(
        directory: String, maxBytes: Int = PersistentBufferSettings.defaultMaxBytes, mode: Mode = .spill,
        syncInterval: Duration = .seconds(1), spillAfter: Duration = .seconds(10), overflow: OverflowPolicy = .dropOldest
    ) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.mode = mode
        self.syncInterval = syncInterval
        self.spillAfter = spillAfter
        self.overflow = overflow
    }

    /// 256 MiB.
    public static let defaultMaxBytes = 256 << 20
    /// Smallest disk budget accepted: 1 MiB.
    public static let minimumBytes = 1 << 20

    /// Size at which a segment file is closed and a new one started: a sixteenth of the budget, 64 KiB to 4 MiB.
    /// Disk space is freed a whole segment at a time.
    public var segmentBytes: Int { min(4 << 20, max(64 << 10, maxBytes / 16)) }
}
