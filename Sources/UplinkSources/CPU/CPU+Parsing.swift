extension CPUSource {
    /// The cumulative time counters of one `cpu` line of `/proc/stat`, in `USER_HZ` ticks.
    ///
    /// Field order (proc(5)): user nice system idle iowait irq softirq steal guest guest_nice. Kernels before
    /// 2.6.11 lack the later fields; they are read as 0. `guest` and `guestNice` are already included in
    /// `user` and `nice` by the kernel.
    struct Times: Sendable, Equatable {
        var user: UInt64 = 0
        var nice: UInt64 = 0
        var system: UInt64 = 0
        var idle: UInt64 = 0
        var iowait: UInt64 = 0
        var irq: UInt64 = 0
        var softirq: UInt64 = 0
        var steal: UInt64 = 0
        var guest: UInt64 = 0
        var guestNice: UInt64 = 0

        /// Number of counters a `cpu` line must have at least (user, nice, system, idle).
        static var minimumFieldCount: Int { 4 }
        /// Number of counters read; later fields added by future kernels are ignored.
        static var knownFieldCount: Int { 10 }

        subscript(field index: Int) -> UInt64 {
            get {
                switch index {
                case 0: user
                case 1: nice
                case 2: system
                case 3: idle
                case 4: iowait
                case 5: irq
                case 6: softirq
                case 7: steal
                case 8: guest
                default: guestNice
                }
            }
            set {
                switch index {
                case 0: user = newValue
                case 1: nice = newValue
                case 2: system = newValue
                case 3: idle = newValue
                case 4: iowait = newValue
                case 5: irq = newValue
                case 6: softirq = newValue
                case 7: steal = newValue
                case 8: guest = newValue
                default: guestNice = newValue
                }
            }
        }
    }

    /// The CPU lines of one read of `/proc/stat`.
    struct StatSnapshot: Sendable, Equatable {
        /// The aggregate `cpu` line, if present and well formed.
        var total: Times?
        /// Per-core counters indexed by core number (`cpu3` → index 3); `nil` for cores absent from the file
        /// (offline) or whose line was malformed.
        var cores: [Times?] = []
        /// Lines of this read that were skipped as malformed.
        var malformedLines: Int = 0

        /// Empties the snapshot, keeping the capacity of `cores` so that re-parsing does not allocate.
        mutating func removeAll() {
            total = nil
            cores.removeAll(keepingCapacity: true)
            malformedLines = 0
        }
    }

    /// Parses `/proc/stat` without allocating (beyond growing `StatSnapshot.cores` the first time).
    ///
    /// Malformed lines are skipped and counted, the rest of the file is still parsed:
    /// - a `cpu…` line whose name is not `cpu` or `cpu<number>`, with fewer than 4 counters, or with a counter
    ///   that is not an unsigned decimal integer fitting 64 bits;
    /// - a second line for the same CPU (the first one wins);
    /// - a core number of `maximumCoreCount` or more;
    /// - a non-blank line that does not start with a key (letters, digits, `_`), i.e. garbage.
    /// Other well-formed lines (`intr`, `ctxt`, `btime`, `softirq`, …) are ignored.
    enum StatParser {
        /// Highest core count accepted (Linux `NR_CPUS` is at most 8192).
        static var maximumCoreCount: Int { 8192 }

        static func parse(_ bytes: UnsafeBufferPointer<UInt8>, into snapshot: inout StatSnapshot) {
            snapshot.removeAll()
            ByteParsing.forEachLine(in: bytes) { line in
                parseLine(bytes, line, into: &snapshot)
            }
        }

        static func parse(_ bytes: [UInt8]) -> StatSnapshot {
            var snapshot = StatSnapshot()
            bytes.withUnsafeBufferPointer { parse($0, into: &snapshot) }
            return snapshot
        }

        private static func parseLine(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>, into snapshot: inout StatSnapshot) {
            var fields = FieldScanner(bytes, line: line)
            guard let name = fields.next() else { return }  // blank line
            guard ByteParsing.hasPrefix(bytes, name, "cpu") else {
                if !ByteParsing.isKey(bytes, name) {
                    snapshot.malformedLines += 1
                }
                return
            }
            // "cpu" is the total; "cpu<digits>" a core.
            let core: Int?
            let suffix = (name.lowerBound + 3)..<name.upperBound
            if suffix.isEmpty {
                core = nil
            } else {
                guard let number = ByteParsing.parseUInt64(bytes, suffix), number < UInt64(maximumCoreCount) else {
                    snapshot.malformedLines += 1
                    return
                }
                core = Int(number)
            }
            var times = Times()
            var count = 0
            while let field = fields.next() {
                guard let value = ByteParsing.parseUInt64(bytes, field) else {
                    snapshot.malformedLines += 1
                    return
                }
                if count < Times.knownFieldCount {
                    times[field: count] = value
                }
                count += 1
            }
            guard count >= Times.minimumFieldCount else {
                snapshot.malformedLines += 1
                return
            }
            if let core {
                if core >= snapshot.cores.count {
                    snapshot.cores.append(contentsOf: repeatElement(nil, count: core + 1 - snapshot.cores.count))
                }
                guard snapshot.cores[core] == nil else {
                    snapshot.malformedLines += 1
                    return
                }
                snapshot.cores[core] = times
            } else {
                guard snapshot.total == nil else {
                    snapshot.malformedLines += 1
                    return
                }
                snapshot.total = times
            }
        }
    }
}
