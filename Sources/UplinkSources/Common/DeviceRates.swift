import UplinkCore

/// The counters of one device (a network interface, a block device) in one read of its kernel file, in the order
/// its kind reports them.
struct DeviceCounters: Sendable, Equatable {
    var name: String
    var values: [UInt64]
}

/// One read of a kernel file of device counters (`/proc/net/dev`, `/proc/diskstats`): the devices in file order, and
/// the number of malformed lines skipped.
struct DeviceCountersFile: Sendable, Equatable {
    var devices: [DeviceCounters] = []
    var malformedLines = 0
}

/// Per-second rates of the kernel counters of devices that come and go (network interfaces, block devices), read
/// once per sample, with each device's tag array (`<tag>=<name>`, then the configured tags) built once.
///
/// A device seen for the first time (or again after a sample without it) only primes its counters. A counter that
/// went down and is not a plausible wrap (see `CounterRate`) means the device was reset: it is skipped for that
/// interval, and the new values are the base for the next one. A device missing from a sample is forgotten with its
/// tags (containers' veth pairs come and go).
struct DeviceRates {
    /// The tag that names the device (`interface`, `device`).
    let tag: String
    /// Builds the tag arrays.
    let emitter: MetricEmitter
    /// The last reading of every device of the previous sample, and its tags.
    private var previous: [String: (timestamp: Int64, values: [UInt64], tags: [Tag])] = [:]
    /// The devices of the sample being taken.
    private var seen = Set<String>()

    init(tag: String, emitter: MetricEmitter) {
        self.tag = tag
        self.emitter = emitter
    }

    /// Records the counters of `device` read at `timestamp` (nanoseconds) and calls `body` with their rates per second
    /// since the previous sample, in the order of its values, and the device's tags; `body` is not called when the
    /// device has no previous reading or a counter was reset.
    mutating func update(_ device: DeviceCounters, timestamp: Int64, _ body: (_ rates: [Double], _ tags: [Tag]) -> Void) {
        let (name, values) = (device.name, device.values)
        seen.insert(name)
        let last = previous[name]
        let tags = last?.tags ?? emitter.tags([Tag(tag, name)])
        previous[name] = (timestamp, values, tags)
        guard let last, last.values.count == values.count else { return }
        let elapsed = timestamp &- last.timestamp
        var rates: [Double] = []
        rates.reserveCapacity(values.count)
        for index in values.indices {
            guard let rate = CounterRate.perSecond(previous: last.values[index], current: values[index], nanoseconds: elapsed)
            else { return }
            rates.append(rate)
        }
        body(rates, tags)
    }

    /// Ends a sample: forgets every device it did not update, so that one that comes back starts afresh.
    mutating func finishSample() {
        if previous.count > seen.count {
            previous = previous.filter { seen.contains($0.key) }
        }
        seen.removeAll(keepingCapacity: true)
    }
}
