extension NetworkSource {
    /// Metric names and units, in the order of `InterfaceCounters.values`.
    static let metrics: [(name: String, unit: String)] = [
        ("network.rx_bytes", MetricUnit.bytesPerSecond), ("network.rx_packets", MetricUnit.operationsPerSecond),
        ("network.rx_errors", MetricUnit.operationsPerSecond), ("network.rx_drops", MetricUnit.operationsPerSecond),
        ("network.tx_bytes", MetricUnit.bytesPerSecond), ("network.tx_packets", MetricUnit.operationsPerSecond),
        ("network.tx_errors", MetricUnit.operationsPerSecond), ("network.tx_drops", MetricUnit.operationsPerSecond),
    ]

    /// Turns successive readings of counters per name into per-second rates.
    ///
    /// A name seen for the first time (or again after it disappeared) only primes its counters. A counter that
    /// went down and is not a plausible wrap (see `CounterRate`) means the device was reset: that name is
    /// skipped for the interval, and the new values are the base for the next one.
    struct RateTracker: Sendable {
        private var previous: [String: (timestamp: Int64, values: [UInt64])] = [:]

        /// Records `values` of `name` read at `timestamp` and returns the rates since the previous reading, or
        /// `nil` when there is none or a counter was reset.
        mutating func update(_ name: String, values: [UInt64], timestamp: Int64) -> [Double]? {
            let last = previous.updateValue((timestamp, values), forKey: name)
            guard let last, last.values.count == values.count else { return nil }
            let elapsed = timestamp &- last.timestamp
            var rates: [Double] = []
            rates.reserveCapacity(values.count)
            for index in values.indices {
                guard let rate = CounterRate.perSecond(previous: last.values[index], current: values[index], nanoseconds: elapsed)
                else { return nil }
                rates.append(rate)
            }
            return rates
        }

        /// Forgets every name not in `names` (removed devices), so that a device that comes back starts afresh.
        mutating func retain(_ names: Set<String>) {
            if previous.count > names.count || previous.keys.contains(where: { !names.contains($0) }) {
                previous = previous.filter { names.contains($0.key) }
            }
        }
    }
}
