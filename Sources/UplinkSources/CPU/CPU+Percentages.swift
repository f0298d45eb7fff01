extension CPUSource {
    /// Shares of one CPU's time over an interval, in percent. The five values add up to 100.
    struct Percentages: Sendable, Equatable {
        /// user + nice (guest time is inside these already).
        var user: Double
        /// system + irq + softirq.
        var system: Double
        var idle: Double
        var iowait: Double
        var steal: Double

        /// The percentages between two reads of the same CPU, or `nil` when they cannot be computed: a
        /// counter went backwards (the core was offline and came back, a counter wrapped or was reset, or the
        /// kernel's idle/iowait accounting stepped back) or no time elapsed.
        init?(from old: Times, to new: Times) {
            guard new.user >= old.user, new.nice >= old.nice, new.system >= old.system, new.idle >= old.idle,
                new.iowait >= old.iowait, new.irq >= old.irq, new.softirq >= old.softirq, new.steal >= old.steal
            else { return nil }
            let user = (new.user - old.user) &+ (new.nice - old.nice)
            let system = (new.system - old.system) &+ (new.irq - old.irq) &+ (new.softirq - old.softirq)
            let idle = new.idle - old.idle
            let iowait = new.iowait - old.iowait
            let steal = new.steal - old.steal
            // guest and guest_nice are left out: the kernel already counts them in user and nice.
            let (partial1, overflow1) = user.addingReportingOverflow(system)
            let (partial2, overflow2) = partial1.addingReportingOverflow(idle)
            let (partial3, overflow3) = partial2.addingReportingOverflow(iowait)
            let (total, overflow4) = partial3.addingReportingOverflow(steal)
            guard !overflow1, !overflow2, !overflow3, !overflow4, total > 0 else { return nil }
            let denominator = Double(total)
            // Each part is at most the total; `min` only guards against a rounding step above 100.
            func percent(_ part: UInt64) -> Double { min(100, Double(part) * 100 / denominator) }
            self.user = percent(user)
            self.system = percent(system)
            self.idle = percent(idle)
            self.iowait = percent(iowait)
            self.steal = percent(steal)
        }

        init(user: Double, system: Double, idle: Double, iowait: Double, steal: Double) {
            self.user = user
            self.system = system
            self.idle = idle
            self.iowait = iowait
            self.steal = steal
        }
    }

    /// Which CPU a result belongs to.
    enum CPUIdentity: Sendable, Equatable, Hashable {
        case total
        case core(Int)
    }

    /// Turns successive reads of `/proc/stat` into percentages. Pure: no I/O, no clock.
    ///
    /// The first read only primes the counters. Afterwards every read yields the percentages over the time
    /// since the previous read, for the total and (if `perCore`) every core present in both reads. A CPU
    /// whose counters went backwards is skipped for that interval (counted in `skippedIntervals`); a core
    /// that disappeared (offline) yields nothing and primes again when it comes back.
    struct Sampler: Sendable {
        let perCore: Bool
        private var previous = StatSnapshot()
        private var current = StatSnapshot()
        private var primed = false
        /// Malformed lines skipped over all reads.
        private(set) var malformedLines = 0
        /// CPU intervals skipped because a counter went backwards (or did not advance at all).
        private(set) var skippedIntervals = 0

        init(perCore: Bool) {
            self.perCore = perCore
        }

        /// Parses one read and calls `body` for every CPU with valid percentages, total first, then cores in
        /// ascending order. Returns the number of malformed lines in this read.
        @discardableResult
        mutating func ingest(_ bytes: UnsafeBufferPointer<UInt8>, _ body: (CPUIdentity, Percentages) -> Void) -> Int {
            StatParser.parse(bytes, into: &current)
            let malformed = current.malformedLines
            malformedLines += malformed
            defer {
                swap(&previous, &current)
                primed = true
            }
            guard primed else { return malformed }
            if let old = previous.total, let new = current.total {
                if let percentages = Percentages(from: old, to: new) {
                    body(.total, percentages)
                } else {
                    skippedIntervals += 1
                }
            }
            if perCore {
                let shared = min(previous.cores.count, current.cores.count)
                for core in 0..<shared {
                    guard let old = previous.cores[core], let new = current.cores[core] else { continue }
                    if let percentages = Percentages(from: old, to: new) {
                        body(.core(core), percentages)
                    } else {
                        skippedIntervals += 1
                    }
                }
            }
            return malformed
        }

        /// Convenience for tests: `ingest` on an array, collecting the results.
        mutating func ingest(_ bytes: [UInt8]) -> [(CPUIdentity, Percentages)] {
            var results: [(CPUIdentity, Percentages)] = []
            bytes.withUnsafeBufferPointer { buffer in
                _ = ingest(buffer) { results.append(($0, $1)) }
            }
            return results
        }
    }
}
