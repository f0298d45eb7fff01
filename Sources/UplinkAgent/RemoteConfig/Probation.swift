import UplinkCore

/// The trial of a remote configuration just applied: within `window` every source it added or changed must show
/// that it works, the local sources must not lose records to it, and, when the stream is up, the collector must
/// acknowledge a record appended after the swap. Only then does the set become the last-known-good; the first
/// criterion that fails rolls it back.
///
/// Pure: `check(_:at:)` judges one `Reading` (what the agent reports at that moment); `run` takes the readings on
/// a clock until a verdict, so tests move the clock instead of sleeping.
public struct Probation: Sendable {
    /// What the agent reports at one moment.
    public struct Reading: Sendable, Equatable {
        /// The remote sources under trial that are running: whether each has ended, and its health.
        public var sources: [String: SourceReading]
        /// Records of local sources dropped since the agent started (buffer full, too large).
        public var localDrops: Int
        /// Whether the stream to the collector is up.
        public var streaming: Bool
        /// The highest sequence the collector acknowledged.
        public var acknowledged: UInt64
        /// The highest sequence appended to the ring.
        public var lastAppended: UInt64

        public init(sources: [String: SourceReading], localDrops: Int, streaming: Bool, acknowledged: UInt64, lastAppended: UInt64) {
            self.sources = sources
            self.localDrops = localDrops
            self.streaming = streaming
            self.acknowledged = acknowledged
            self.lastAppended = lastAppended
        }
    }

    /// One source under trial.
    public struct SourceReading: Sendable, Equatable {
        public var ended: Bool
        public var health: SourceHealth.Snapshot

        public init(ended: Bool, health: SourceHealth.Snapshot) {
            self.ended = ended
            self.health = health
        }
    }

    /// How a trial ended, or that it goes on.
    public enum Verdict: Sendable, Equatable {
        case pending
        /// Every criterion held; `skipped` names criteria that could not be checked (the collector unreachable).
        case passed(skipped: [String])
        /// The first criterion that failed, as one sentence for the status.
        case failed(String)
        /// Ended without a verdict: something the trial must not outlast came first (a reload of the local file, a
        /// pin). Neither passed nor failed.
        case interrupted
    }

    /// The sources added or changed by the remote apply.
    public let watched: [String]
    /// How long the trial lasts (`remote_config.probation`).
    public let window: Duration
    /// The highest sequence appended before the swap: an acknowledgement above it proves the new set end to end.
    public let swapSequence: UInt64
    /// Local drops counted at the swap.
    public let localDropsAtSwap: Int
    /// How many more local drops the trial tolerates: as many as the local sources dropped, on average, in a window
    /// of the same length before the swap (none when they never dropped).
    public let toleratedLocalDrops: Int
    /// When the trial began, on the clock `run` uses.
    private let started: ContinuousClock.Instant

    /// - Parameters:
    ///   - uptime: How long the agent had run at the swap, for the local sources' drop rate before it.
    public init(
        watched: [String], window: Duration, swapSequence: UInt64, localDropsAtSwap: Int, uptime: Duration,
        started: ContinuousClock.Instant
    ) {
        self.watched = watched
        self.window = window
        self.swapSequence = swapSequence
        self.localDropsAtSwap = localDropsAtSwap
        let ratio = uptime > .zero ? Double(window / .milliseconds(1)) / Double(uptime / .milliseconds(1)) : 0
        self.toleratedLocalDrops = Int((Double(localDropsAtSwap) * min(ratio, 1)).rounded(.up))
        self.started = started
    }

    /// The verdict for `reading` taken at `now`: a failure as soon as one shows (a source ended, local drops over
    /// the tolerance), otherwise pending until the window is over, then the remaining criteria.
    public func check(_ reading: Reading, at now: ContinuousClock.Instant) -> Verdict {
        for name in watched {
            guard let source = reading.sources[name] else { return .failed("source \(name) is not running") }
            if source.ended {
                return .failed("source \(name) ended" + (source.health.reason.map { ": \($0)" } ?? ""))
            }
        }
        let dropped = reading.localDrops - localDropsAtSwap
        if dropped > toleratedLocalDrops {
            return .failed("local sources dropped \(dropped) records during probation (tolerated: \(toleratedLocalDrops))")
        }
        guard now - started >= window else { return .pending }
        for name in watched {
            let health = reading.sources[name]!.health
            switch health.state {
            case .healthy, .idle: continue
            case .failing: return .failed("source \(name) is failing: \(health.reason ?? "no reason given")")
            case .starting: return .failed("source \(name) reported nothing within \(window)")
            }
        }
        var skipped: [String] = []
        if reading.lastAppended > swapSequence {
            if !reading.streaming {
                skipped.append("acknowledgement (the stream is down)")
            } else if reading.acknowledged <= swapSequence {
                return .failed("the collector acknowledged nothing appended after the swap (stream up, acknowledged \(reading.acknowledged), swap at \(swapSequence))")
            }
        } else {
            skipped.append("acknowledgement (nothing was appended after the swap)")
        }
        return .passed(skipped: skipped)
    }

    /// Takes a reading every `every` on `clock` until the verdict is not pending. Cancellation returns `.pending`;
    /// `interrupted` (asked before each reading) returning true ends it with `.interrupted`.
    public func run<C: Clock<Duration>>(
        clock: C, every interval: Duration = .seconds(1), interrupted: () async -> Bool = { false },
        read: () async -> Reading
    ) async -> Verdict where C.Instant == ContinuousClock.Instant {
        while !Task.isCancelled {
            if await interrupted() { return .interrupted }
            let verdict = check(await read(), at: clock.now)
            if verdict != .pending { return verdict }
            let remaining = window - (clock.now - started)
            do {
                try await clock.sleep(for: remaining > .zero ? min(interval, remaining) : interval)
            } catch {
                return .pending
            }
        }
        return .pending
    }
}
