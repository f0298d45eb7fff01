import UplinkConfig
import UplinkCore

/// When a sensor samples and how its metrics are tagged: the keys `interval`, `jitter` and `tags` that every sensor
/// kind (all but `generator` and `tail`) shares.
public struct SensorSchedule: Sendable, Equatable {
    /// Time between two samples (YAML key `interval`, a duration > 0). Default: 10 seconds. Ticks are aligned to
    /// multiples of the interval on the wall clock (a 10 s interval samples at :00, :10, :20, …). Values below 1 ms
    /// are raised to 1 ms.
    public var interval: Duration

    /// Largest random delay after each aligned tick (YAML key `jitter`, a duration ≥ 0 below the interval), so a
    /// fleet sampling on the same boundaries does not read in lockstep. Default: 0 (none).
    public var jitter: Duration

    /// Tags added to every metric of the source, after the metric's own tags (YAML key `tags`, a mapping of
    /// strings). Default: none.
    public var tags: [Tag]

    /// A schedule with the given settings; the defaults are those documented on each property.
    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = []) {
        self.interval = interval
        self.jitter = jitter
        self.tags = tags
    }

    /// The keys of the schedule, as every sensor kind's `keys` begins.
    public static let keys: [SourceKey] = [
        SourceKey(
            "interval", "duration, > 0", default: "`10s`",
            "Time between samples, aligned to the wall clock (a 10 s interval samples at :00, :10, …)."),
        SourceKey(
            "jitter", "duration, ≥ 0 and < `interval`", default: "`0s`",
            "Each sample is taken a random delay in `[0, jitter)` after its aligned tick, so that many agents do not "
                + "read at once. The schedule itself does not drift."),
        SourceKey(
            "tags", "mapping of strings", default: "none",
            "Tags added to every metric of the source, after the metric's own tags (e.g. `{ site: lab, rack: \"3\" }`)."),
    ]

    /// Reads `interval`, `jitter` (which must be below the interval) and `tags` from a sensor's mapping; absent or
    /// unusable keys keep their defaults.
    public static func decode(_ mapping: ConfigMapping) -> SensorSchedule {
        var schedule = SensorSchedule()
        if let value = mapping.duration("interval", .greaterThan(.zero)) { schedule.interval = value }
        if let value = mapping.duration("jitter", .atLeast(.zero)) {
            if value >= schedule.interval, let node = mapping.value("jitter") {
                mapping.decoder.report(
                    .invalidValue, at: node.mark, path: mapping.path("jitter"), "jitter must be shorter than the interval",
                    hint: "e.g. 'jitter: 1s' with 'interval: 10s'")
            } else {
                schedule.jitter = value
            }
        }
        if let value = mapping.tags("tags") { schedule.tags = value }
        return schedule
    }
}

/// The configuration of a sensor kind: it samples on a `SensorSchedule`. The kind supplies its own keys' decoding
/// and what it does on the schedule; decoding the schedule and running it are shared here.
public protocol PeriodicSensorConfig: RunnableSourceKindConfig {
    /// When the sensor samples and which tags it adds (YAML keys `interval`, `jitter`, `tags`).
    var schedule: SensorSchedule { get set }

    /// Reads the kind's own keys (all of `keys` but the schedule's) from a source's mapping into `self`, reporting
    /// each problem to `mapping.decoder`; keys that are absent or unusable keep their values.
    mutating func decodeOwnKeys(_ mapping: ConfigMapping)

    /// Samples on `sensor` (which ticks on `schedule` and emits with the configured tags) until the task is
    /// cancelled, or returns at once after `sensor.disable(_:metadata:)` when there is nothing to sample here.
    func sample(with sensor: PeriodicSensorDriver) async
}

extension PeriodicSensorConfig {
    /// The defaults with the schedule (`SensorSchedule.decode`), then the kind's own keys (`decodeOwnKeys`), read
    /// from `mapping`.
    public static func decode(_ mapping: ConfigMapping) -> Self {
        var config = defaults
        config.schedule = .decode(mapping)
        config.decodeOwnKeys(mapping)
        return config
    }

    /// Samples (`sample(with:)`) on a `PeriodicSensorDriver` for the source `name`.
    public func run(source name: String, clock: any TickClock, context: SourceContext) async throws {
        await sample(with: PeriodicSensorDriver(self, source: name, clock: clock, context: context))
    }

    /// Time between two samples (`schedule.interval`, YAML key `interval`). Default: 10 seconds.
    public var interval: Duration {
        get { schedule.interval }
        set { schedule.interval = newValue }
    }

    /// Largest random delay after each aligned tick (`schedule.jitter`, YAML key `jitter`). Default: 0.
    public var jitter: Duration {
        get { schedule.jitter }
        set { schedule.jitter = newValue }
    }

    /// Tags added to every metric of the source (`schedule.tags`, YAML key `tags`). Default: none.
    public var tags: [Tag] {
        get { schedule.tags }
        set { schedule.tags = newValue }
    }
}
