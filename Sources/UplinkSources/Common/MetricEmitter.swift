import UplinkCore

/// Emits metric records of one source: its name, the configured `tags` appended to each record's own tags.
struct MetricEmitter: Sendable {
    let sink: any RecordSink
    let source: String
    /// The source's configured tags (`tags:` in the configuration), added after each metric's own tags.
    let extraTags: [Tag]
    /// Told that the source works whenever it emits.
    let health: SourceHealth

    init(context: SourceContext, source: String, extraTags: [Tag]) {
        self.sink = context.sink
        self.health = context.health
        self.source = source
        self.extraTags = extraTags
    }

    /// The tag array for a metric with `own` tags: `own` followed by the configured tags. Without either, the other
    /// array itself is returned (shared, not copied), so a metric without tags of its own costs no allocation.
    func tags(_ own: [Tag]) -> [Tag] {
        if extraTags.isEmpty { return own }
        return own.isEmpty ? extraTags : own + extraTags
    }

    /// Emits one metric. `tags` are the metric's own tags; the configured tags are added here unless
    /// `tagsAreComplete` says they already were (tag arrays cached with `tags(_:)`).
    func emit(
        _ name: String, _ value: Double, unit: String, tags: [Tag] = [], tagsAreComplete: Bool = false, timestamp: Int64
    ) {
        let all = tagsAreComplete ? tags : self.tags(tags)
        health.succeeded()
        sink.emit(.metric(name, value: value, unit: unit, tags: all, source: source, timestamp: timestamp))
    }
}

/// The units metrics are reported in (see docs/metrics.md). A metric's unit is one of these, or empty for a
/// dimensionless value (load averages).
public enum MetricUnit {
    public static let percent = "percent"
    public static let bytes = "bytes"
    public static let bytesPerSecond = "bytes_per_second"
    public static let operationsPerSecond = "operations_per_second"
    public static let celsius = "celsius"
    public static let rpm = "rpm"
    public static let volts = "volts"
    public static let amperes = "amperes"
    public static let watts = "watts"
    public static let seconds = "seconds"
    public static let count = "count"

    /// Every unit of the convention, in the order docs/metrics.md lists them.
    public static let all = [
        percent, bytes, bytesPerSecond, operationsPerSecond, celsius, rpm, volts, amperes, watts, seconds, count,
    ]
}

/// Per-second rates of monotonically increasing kernel counters, across wraps and resets.
enum CounterRate {
    /// The increase from `previous` to `current`, or `nil` when the counter was reset.
    ///
    /// A counter that went down either wrapped or was reset (a device re-created, a driver reloaded). It is taken
    /// as a wrap when the counter's width (32 bits if `previous` fits in 32 bits, else 64) makes the increase
    /// small: at most a quarter of the width. Otherwise it was a reset, and the interval is skipped.
    static func delta(previous: UInt64, current: UInt64) -> UInt64? {
        if current >= previous { return current - previous }
        if previous <= UInt64(UInt32.max) {
            guard current <= UInt64(UInt32.max) else { return nil }
            let wrapped = (UInt64(UInt32.max) - previous) + current + 1
            return wrapped <= UInt64(UInt32.max) / 4 ? wrapped : nil
        }
        let wrapped = (UInt64.max - previous) &+ current &+ 1
        return wrapped <= UInt64.max / 4 ? wrapped : nil
    }

    /// `delta(previous:current:)` per second over `nanoseconds`, or `nil` after a reset or for a
    /// non-positive interval.
    static func perSecond(previous: UInt64, current: UInt64, nanoseconds: Int64) -> Double? {
        guard nanoseconds > 0, let delta = delta(previous: previous, current: current) else { return nil }
        return Double(delta) / (Double(nanoseconds) / 1e9)
    }
}

/// Name patterns with `*` (any run of characters, including none) and `?` (one character).
struct GlobPattern: Sendable, Equatable {
    let pattern: [UInt8]

    init(_ pattern: String) {
        self.pattern = Array(pattern.utf8)
    }

    func matches(_ name: String) -> Bool {
        let text = Array(name.utf8)
        var p = 0
        var t = 0
        var star: Int?
        var resume = 0
        while t < text.count {
            if p < pattern.count, pattern[p] == UInt8(ascii: "?") || pattern[p] == text[t] {
                p += 1
                t += 1
            } else if p < pattern.count, pattern[p] == UInt8(ascii: "*") {
                star = p
                resume = t
                p += 1
            } else if let star {
                p = star + 1
                resume += 1
                t = resume
            } else {
                return false
            }
        }
        while p < pattern.count, pattern[p] == UInt8(ascii: "*") { p += 1 }
        return p == pattern.count
    }
}

/// An include list and an exclude list of glob patterns. A name passes when it matches an include pattern (or
/// the include list is empty) and no exclude pattern.
struct NameFilter: Sendable {
    let include: [GlobPattern]
    let exclude: [GlobPattern]

    init(include: [String], exclude: [String]) {
        self.include = include.map(GlobPattern.init)
        self.exclude = exclude.map(GlobPattern.init)
    }

    func allows(_ name: String) -> Bool {
        (include.isEmpty || include.contains { $0.matches(name) }) && !exclude.contains { $0.matches(name) }
    }
}
