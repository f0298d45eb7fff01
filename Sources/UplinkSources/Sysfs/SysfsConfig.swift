import UplinkCore

/// Configuration of a `sysfs` source, which reads one numeric value from a file on every tick: an industrial
/// I/O sensor (`/sys/bus/iio/devices/iio:device0/in_temp_raw`), a GPIO value, any sysfs or procfs attribute.
///
/// Every tick emits `metric` = value × `scale` + `offset`, in `unit`.
public struct SysfsConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// The file to read (YAML key `path`, required). Its content, trimmed of whitespace, must be a decimal
    /// number (`42`, `-12`, `3.25`, `1e3`).
    public var path: String
    /// Factor applied to the raw value (YAML key `scale`, a number). Default: 1.
    public var scale: Double
    /// Added after scaling (YAML key `offset`, a number). Default: 0.
    public var offset: Double
    /// Name of the metric (YAML key `metric`, dotted lowercase). Default: `"sysfs.value"`.
    public var metric: String
    /// Unit of the metric after scaling (YAML key `unit`, one of docs/metrics.md's units, or empty).
    /// Default: empty.
    public var unit: String

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(
        interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], path: String = "",
        scale: Double = 1, offset: Double = 0, metric: String = "sysfs.value", unit: String = ""
    ) {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.path = path
        self.scale = scale
        self.offset = offset
        self.metric = metric
        self.unit = unit
    }
}
