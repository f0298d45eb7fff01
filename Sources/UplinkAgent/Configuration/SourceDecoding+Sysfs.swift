import UplinkConfig
import UplinkSources

/// `type: sysfs` (see `SysfsConfig`): the sensor keys (`interval`, `jitter`, `tags`), and
/// - `path` (path, required): the file holding one number.
/// - `scale` (finite number): factor applied to the raw value. Default `1`.
/// - `offset` (finite number): added after scaling. Default `0`.
/// - `metric` (metric name): Default `sysfs.value`.
/// - `unit` (one of docs/metrics.md's units, or empty): Default empty.
extension SourceDecoding {
    static let sysfsKeys = sensorKeys + ["path", "scale", "offset", "metric", "unit"]

    static func decodeSysfs(_ mapping: ConfigMapping) -> SysfsConfig {
        var config = SysfsConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let path = mapping.requiredString("path", hint: "e.g. 'path: /sys/bus/iio/devices/iio:device0/in_temp_raw'") {
            config.path = path
        }
        if let scale = mapping.double("scale") { config.scale = scale }
        if let offset = mapping.double("offset") { config.offset = offset }
        if let metric = decodeMetricName(mapping, "metric") { config.metric = metric }
        if let unit = decodeUnit(mapping, "unit") { config.unit = unit }
        return config
    }

    /// `key` as a metric name: dotted lowercase, `[a-z0-9_]` segments separated by `.`.
    static func decodeMetricName(_ mapping: ConfigMapping, _ key: String) -> String? {
        guard let name = mapping.string(key), let node = mapping.value(key) else { return nil }
        let segments = name.split(separator: ".", omittingEmptySubsequences: false)
        let valid = segments.allSatisfy { segment in
            !segment.isEmpty && segment.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }
        }
        guard valid else {
            mapping.decoder.report(
                .invalidValue, at: node.mark, path: mapping.path(key), "invalid metric name '\(name)'",
                hint: "dotted lowercase, e.g. 'enclosure.temperature' (see docs/metrics.md)")
            return nil
        }
        return name
    }

    /// `key` as a unit of docs/metrics.md, or empty (`""`).
    static func decodeUnit(_ mapping: ConfigMapping, _ key: String) -> String? {
        guard let node = mapping.value(key) else { return nil }
        guard let unit = mapping.decoder.string(node, at: mapping.path(key), allowEmpty: true) else { return nil }
        guard unit.isEmpty || MetricUnit.all.contains(unit) else {
            mapping.decoder.report(
                .invalidValue, at: node.mark, path: mapping.path(key), "unknown unit '\(unit)'",
                hint: "one of: " + MetricUnit.all.joined(separator: ", ") + ", or \"\" for none")
            return nil
        }
        return unit
    }
}
