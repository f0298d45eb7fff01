import UplinkConfig
import UplinkSources

/// `type: exec` (see `ExecConfig`): the sensor keys (`interval`, `jitter`, `tags`), and
/// - `command` (non-empty list of strings, required): program and arguments, no shell.
/// - `timeout` (duration > 0): the command is killed after this long (at most the interval). Default `5s`.
/// - `format` (`number`, `keyvalue`, `influx` or `json`): how its output is read. Default `number`.
/// - `metric` (metric name): the name for `number` (and a bare JSON number). Default `exec.value`.
/// - `prefix` (metric name): prefix for `keyvalue` and `json` keys. Default `exec`.
/// - `unit` (one of docs/metrics.md's units, or empty): unit of every metric. Default empty.
extension SourceDecoding {
    static let execKeys = sensorKeys + ["command", "timeout", "format", "metric", "prefix", "unit"]

    static func decodeExec(_ mapping: ConfigMapping) -> ExecConfig {
        var config = ExecConfig()
        decodeSensor(mapping, interval: &config.interval, jitter: &config.jitter, tags: &config.tags)
        if let node = mapping.require("command", hint: "e.g. 'command: [/usr/local/bin/read-sensor, --celsius]'") {
            if let command = decodeStrings(mapping, "command") {
                if command.isEmpty {
                    mapping.decoder.report(
                        .invalidValue, at: node.mark, path: mapping.path("command"), "the command must not be empty",
                        hint: "a list: the program, then its arguments")
                } else {
                    config.command = command
                }
            }
        }
        if let timeout = mapping.duration("timeout", .greaterThan(.zero)) { config.timeout = timeout }
        if let format = mapping.enumeration("format", as: ExecConfig.Format.self) { config.format = format }
        if let metric = decodeMetricName(mapping, "metric") { config.metric = metric }
        if let prefix = decodeMetricName(mapping, "prefix") { config.prefix = prefix }
        if let unit = decodeUnit(mapping, "unit") { config.unit = unit }
        return config
    }
}
