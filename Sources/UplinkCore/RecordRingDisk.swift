/// The disk side of a persistent `RecordRing` (`buffer.persist`), as the ring uses it: frames written in sequence
/// order, read back for sending, released once acknowledged, flushed and closed. Declared here so that the ring does
/// no file I/O itself; `PersistentBuffer` (the `UplinkPersistentBuffer` module) keeps the segment files. Every call is
/// made under the ring's lock, except the flush `takeSync` returns.
public protocol RecordRingDisk: Sendable {
    /// Where and how the frames are kept.
    var settings: PersistentBufferSettings { get }
    /// The disk side's counters.
    var statistics: PersistentBufferStatistics { get }
    /// The sequence the ring assigns next: where the previous run stopped.
    var nextSequence: UInt64 { get }

    /// Writes one frame (the body in one or two parts); frames come in increasing sequence order. `placeholder`:
    /// only the header, recording that `sequence` was used. `acknowledged`: the collector's acknowledged sequence,
    /// to count what a full budget drops.
    mutating func append(
        sequence: UInt64, sourceWord: UInt32, placeholder: Bool,
        _ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, acknowledged: UInt64
    ) -> RecordRingDiskWrite

    /// Frames with a body from `sequence` up to (not including) `limit`, oldest first, while their bodies add up to
    /// at most `maxBytes` (at least one when `mayExceed`). Returns the sequence to continue from (`limit` when the
    /// disk holds nothing more below it) and what was delivered.
    mutating func read(
        from sequence: UInt64, below limit: UInt64, maxBytes: Int, mayExceed: Bool,
        _ body: (_ sequence: UInt64, _ bytes: UnsafeRawBufferPointer) -> Void
    ) -> (next: UInt64, frames: Int, bytes: Int)

    /// Notes that the ring handed out sequences below `next`.
    mutating func noteAssigned(next: UInt64)

    /// Whether the disk holds a frame with a body above `acknowledged`.
    func hasData(above acknowledged: UInt64) -> Bool

    /// Frees what the collector acknowledged up to `acknowledged`.
    mutating func release(through acknowledged: UInt64)

    /// The flush of what was written since the last call, to run outside the ring's lock; nil when nothing was.
    mutating func takeSync() -> (@Sendable () -> Void)?

    /// Flushes, closes and records a clean shutdown with the next sequence to assign.
    mutating func closeCleanly(next: UInt64)
}

/// What became of a frame handed to `RecordRingDisk.append`.
public enum RecordRingDiskWrite: Sendable, Equatable {
    /// The frame is in the newest segment.
    case written
    /// The disk budget is full and `overflow` is `drop_newest` (or the frame alone exceeds the budget).
    case refused
    /// The system refused the write (disk full, I/O error); logged once.
    case failed
}

/// Counters of a ring's disk side (`RecordRingDisk`).
public struct PersistentBufferStatistics: Sendable, Equatable {
    /// The stream epoch in use.
    public var epoch: UInt64 = 0
    /// Whether the epoch came from the directory's `state` file (the stream continues).
    public var resumedEpoch = false
    /// Whether the previous run recorded a clean shutdown.
    public var previousShutdownClean = false
    /// The first sequence this run assigns.
    public var openedAtSequence: UInt64 = 0
    /// Frames with a body found on disk when the buffer was opened.
    public var restoredFrames = 0
    /// Their body bytes.
    public var restoredBytes = 0
    /// Tails cut off at opening because a write was interrupted (`uplink_buffer_disk_corrupt_total`).
    public var tornTails = 0
    /// Damaged stretches skipped or cut off at opening (checksum or order wrong).
    public var corruptRegions = 0
    /// Frames written (placeholders included) and their bytes, headers included.
    public var framesWritten = 0
    /// The bytes of `framesWritten`.
    public var bytesWritten = 0
    /// Unacknowledged frames deleted to keep within the budget (`drop_oldest`).
    public var framesDropped = 0
    /// Frames refused because the budget was full (`drop_newest`).
    public var framesRefused = 0
    /// Writes the system refused.
    public var writeErrors = 0
    /// Bytes of segment files now.
    public var diskBytes = 0

    /// All counters zero.
    public init() {}
}
