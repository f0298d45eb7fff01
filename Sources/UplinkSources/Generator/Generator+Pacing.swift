extension GeneratorSource {
    /// Which records are due when, for a fixed rate: record `k` (from 0) is due `k / rate` seconds after the
    /// start. Computing from the start instant (not from the previous batch) keeps the long-run rate exact.
    struct Pacer: Sendable {
        /// Records per second; positive and finite.
        let rate: Double
        let start: ContinuousClock.Instant

        /// Shortest sleep between batches; at high rates each batch holds about `rate × batchPeriod` records.
        static let batchPeriod: Duration = .milliseconds(1)

        init(rate: Double, start: ContinuousClock.Instant) {
            self.rate = rate
            self.start = start
        }

        /// How many records are due at `now` (those with index `0..<due`).
        func due(at now: ContinuousClock.Instant) -> UInt64 {
            let elapsed = Self.seconds(start.duration(to: now))
            guard elapsed >= 0 else { return 0 }
            let due = (elapsed * rate).rounded(.down) + 1
            return due >= 1.8e19 ? UInt64.max : UInt64(due)
        }

        /// The instant record `index` is due.
        func dueInstant(ofRecord index: UInt64) -> ContinuousClock.Instant {
            start.advanced(by: .seconds(Double(index) / rate))
        }

        /// When to wake up next after having emitted `emitted` records at `now`: when the next record is due,
        /// but not sooner than `batchPeriod` from now.
        func wakeUp(afterEmitting emitted: UInt64, now: ContinuousClock.Instant) -> ContinuousClock.Instant {
            max(dueInstant(ofRecord: emitted), now.advanced(by: Self.batchPeriod))
        }

        static func seconds(_ duration: Duration) -> Double {
            let (seconds, attoseconds) = duration.components
            return Double(seconds) + Double(attoseconds) * 1e-18
        }
    }
}
