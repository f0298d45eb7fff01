/// When a log source (`tail`, `journald`) writes its checkpoint: where the collector's acknowledgements have got to.
///
/// A checkpoint that lags only makes the source read and send again, after a crash, lines the collector already has;
/// the collector recognises them by their origin and stores them once. So a checkpoint whose only change is that
/// acknowledgements moved less than `trickleBytes` since the last write waits `trickleIntervals` intervals: a
/// trickle of lines costs no checkpoint write (with its `fsync`s, on an SD card the wear, and a wake-up of the thread
/// pool) every `checkpoint_interval`, and a crash sends at most `trickleBytes` again. Any other change (a file followed,
/// renamed, truncated or forgotten) is written after one interval: a file missing from the checkpoint would be read
/// from its end after a crash, and its unread lines lost.
struct CheckpointSchedule {
    /// `checkpoint_interval`: the least time between two writes that are not forced.
    let interval: Duration
    /// Acknowledged bytes since the last write from which the checkpoint is written after one interval.
    static let trickleBytes = 1 << 20
    /// How many intervals a checkpoint that only trickled waits.
    static let trickleIntervals = 30

    /// When the last write began (the start, before any): intervals are counted from here.
    private(set) var lastWrite: ContinuousClock.Instant
    /// One interval, and `trickleIntervals` intervals, after `lastWrite`: kept, since a source asks after every read
    /// whether a write is due, and `Duration` arithmetic goes through 128-bit integers.
    private var intervalAfterLastWrite: ContinuousClock.Instant
    private var trickleAfterLastWrite: ContinuousClock.Instant
    /// Something besides acknowledged progress changed since the last write.
    private var changed = false
    /// Bytes acknowledged since the last write.
    private var acknowledgedBytes = 0

    /// A schedule whose first interval starts at `now`.
    init(interval: Duration, now: ContinuousClock.Instant) {
        self.interval = interval
        lastWrite = now
        intervalAfterLastWrite = now.advanced(by: interval)
        trickleAfterLastWrite = now.advanced(by: interval * Self.trickleIntervals)
    }

    /// Whether anything changed since the last write.
    var isDirty: Bool { changed || acknowledgedBytes > 0 }

    /// Something besides acknowledged progress changed: due one interval after the last write.
    mutating func markChanged() {
        changed = true
    }

    /// Acknowledgements moved `bytes` further.
    mutating func acknowledged(bytes: Int) {
        guard bytes > 0 else { return }
        acknowledgedBytes = acknowledgedBytes > Int.max - bytes ? Int.max : acknowledgedBytes + bytes
    }

    /// When the write of what changed is due; nil when nothing changed.
    var due: ContinuousClock.Instant? {
        if changed || acknowledgedBytes >= Self.trickleBytes { return intervalAfterLastWrite }
        if acknowledgedBytes > 0 { return trickleAfterLastWrite }
        return nil
    }

    /// Whether a write is due at `now`.
    func isDue(now: ContinuousClock.Instant) -> Bool {
        guard let due else { return false }
        return due <= now
    }

    /// When the source should next look: the write's due time, and with `awaitingAcknowledgement` (lines wait for the
    /// collector, whose acknowledgements the source takes when it looks) one interval from `now` at the latest; nil
    /// when neither. Never before `now`.
    func nextLook(now: ContinuousClock.Instant, awaitingAcknowledgement: Bool) -> ContinuousClock.Instant? {
        var next = due
        if awaitingAcknowledgement {
            let look = now.advanced(by: interval)
            next = min(next ?? look, look)
        }
        return next.map { max(now, $0) }
    }

    /// A write begins at `now` and takes everything that changed. A write that fails calls `markChanged()` again,
    /// so it is retried after the interval.
    mutating func writing(at now: ContinuousClock.Instant) {
        lastWrite = now
        intervalAfterLastWrite = now.advanced(by: interval)
        trickleAfterLastWrite = now.advanced(by: interval * Self.trickleIntervals)
        changed = false
        acknowledgedBytes = 0
    }
}
