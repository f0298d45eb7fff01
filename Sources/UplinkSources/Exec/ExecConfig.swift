import UplinkCore

/// Configuration of an `exec` source, which runs a command on every tick and turns what it prints into metrics.
public struct ExecConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// How the command's standard output is read (YAML key `format`).
    public enum Format: String, Sendable, Equatable, CaseIterable {
        /// One number (`21.5`), reported as `metric`.
        case number
        /// `key=value` pairs separated by blanks, commas or line breaks (`temp=21.5 humidity=40`), reported as
        /// `<prefix>.<key>`.
        case keyvalue
        /// Influx line protocol (`weather,room=lab temp=21.5,humidity=40i`), reported as
        /// `<measurement>.<field>` with the line's tags; the line's own timestamp is ignored.
        case influx
        /// A JSON object (`{"temp": 21.5, "fan": {"rpm": 1200}}`), its numbers (and booleans as 1/0) reported as
        /// `<prefix>.<path>` with nested keys joined by `.` (`exec.fan.rpm`); a bare number as `metric`.
        case json
    }

    /// The program and its arguments (YAML key `command`, a list of strings, required). The program is looked
    /// up in `PATH`; no shell is involved (use `[sh, -c, "…"]` for one). Standard input and error are
    /// `/dev/null`.
    public var command: [String]
    /// Longest time a run may take (YAML key `timeout`, a duration). Default: 5 seconds. When it is over, the
    /// command's whole process group is killed (`SIGKILL`) and a warning is logged. Capped at the interval.
    public var timeout: Duration
    /// How standard output is read (YAML key `format`: `number`, `keyvalue`, `influx` or `json`).
    /// Default: `number`.
    public var format: Format
    /// Metric name for the `number` format (YAML key `metric`). Default: `"exec.value"`.
    public var metric: String
    /// Metric name prefix for the `keyvalue` and `json` formats (YAML key `prefix`). Default: `"exec"`.
    public var prefix: String
    /// Unit of every metric (YAML key `unit`, one of docs/metrics.md's units, or empty). Default: empty.
    public var unit: String

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(
        interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], command: [String] = [],
        timeout: Duration = .seconds(5), format: Format = .number, metric: String = "exec.value",
        prefix: String = "exec", unit: String = ""
    ) {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.command = command
        self.timeout = timeout
        self.format = format
        self.metric = metric
        self.prefix = prefix
        self.unit = unit
    }

    /// The timeout actually used: `timeout`, but no longer than the interval.
    public var effectiveTimeout: Duration { min(timeout, interval) }
}
