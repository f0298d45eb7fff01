import UplinkConfig
import UplinkCore

/// `type: sysfs`: its keys, decoding, documentation and example.
extension SysfsConfig {
    public static let typeName = "sysfs"

    public static var defaults: SysfsConfig { SysfsConfig() }

    public static let summary = """
        One number read from a file on every tick (an industrial I/O sensor such as
        `/sys/bus/iio/devices/iio:device0/in_temp_raw`, a GPIO value), reported as `metric` = raw × `scale` + `offset`.
        """

    public static let keys = SensorSchedule.keys + [
        SourceKey(
            "path", "path", default: SourceKey.required,
            "The file; its content, trimmed, must be a decimal number (`42`, `-12`, `3.25`, `1e3`)."),
        SourceKey("scale", "number", default: "`1`", "Factor applied to the raw value (e.g. `0.001` for millidegrees)."),
        SourceKey("offset", "number", default: "`0`", "Added after scaling."),
        SourceKey("metric", "metric name", default: "`sysfs.value`", "Dotted lowercase (`[a-z0-9_]` segments joined by `.`)."),
        SourceKey("unit", "unit", default: "`\"\"`", "One of the units in [metrics.md](metrics.md), or `\"\"` for none."),
    ]

    public static let example = """
          # One number from any file, × scale + offset: an IIO sensor, a GPIO value, a sysfs attribute.
          - name: board-temperature
            type: sysfs
            path: /sys/class/thermal/thermal_zone0/temp   # the file to read. Required.
            scale: 0.001          # factor applied to the raw value. Default: 1.
            offset: 0             # added after scaling. Default: 0.
            metric: board.temperature  # metric name (dotted lowercase). Default: sysfs.value.
            unit: celsius         # one of the units in docs/metrics.md, or "". Default: "".
        """

    public mutating func decodeOwnKeys(_ mapping: ConfigMapping) {
        if let path = mapping.requiredString("path", hint: "e.g. 'path: /sys/bus/iio/devices/iio:device0/in_temp_raw'") {
            self.path = path
        }
        if let scale = mapping.double("scale") { self.scale = scale }
        if let offset = mapping.double("offset") { self.offset = offset }
        if let metric = mapping.metricName("metric") { self.metric = metric }
        if let unit = mapping.metricUnit("unit") { self.unit = unit }
    }
}
