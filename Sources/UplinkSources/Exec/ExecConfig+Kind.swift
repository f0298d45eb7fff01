import UplinkConfig
import UplinkCore

/// `type: exec`: its keys, decoding, documentation and example.
extension ExecConfig {
    public static let typeName = "exec"

    public static var defaults: ExecConfig { ExecConfig() }

    public static let summary = """
        A command run on every tick; what it prints becomes metrics. No shell is involved (write `[sh, -c, "…"]` for one);
        standard input and error are `/dev/null`; the program is looked up in `PATH`. A command that is still running after
        `timeout` is killed with `SIGKILL`, with every process it started in its process group. Waiting for it never blocks a
        thread, so it delays no other source. A run that fails (cannot start, times out, exits non-zero, prints nothing
        usable) logs a warning when failures start, then at debug level while they go on, and a notice when it works again.
        """

    public static let keys = SensorSchedule.keys + [
        SourceKey("command", "non-empty list of strings", default: SourceKey.required, "The program and its arguments."),
        SourceKey("timeout", "duration, > 0", default: "`5s`", "Longest run; at most the interval."),
        SourceKey(
            "format", "`number`, `keyvalue`, `influx` or `json`", default: "`number`",
            "`number`: the output is one number, reported as `metric`. `keyvalue`: `key=value` pairs separated by blanks, "
                + "commas, `;` or line breaks, reported as `<prefix>.<key>`. `influx`: line protocol, "
                + "`measurement,tag=v field=1,other=2i`, reported as `<measurement>.<field>` with the line's tags (string "
                + "fields skipped, booleans 1/0, the line's timestamp ignored). `json`: an object whose numbers and booleans "
                + "(1/0) are reported as `<prefix>.<path>`, nested keys joined by `.`; a bare number as `metric`."),
        SourceKey("metric", "metric name", default: "`exec.value`", "The name for `number` (and a bare JSON number)."),
        SourceKey("prefix", "metric name", default: "`exec`", "Prefix for `keyvalue` and `json` keys."),
        SourceKey("unit", "unit", default: "`\"\"`", "Unit of every metric of the source."),
    ]

    public static let example = #"""
          # A command run on every tick (no shell; argv list); its standard output becomes metrics.
          - name: script
            type: exec
            interval: 30s
            # Program and arguments; required. This one also appends a line to quickstart.log for the `app-log` tailer below.
            command: [sh, -c, "echo \"$(date -u +%FT%TZ) INFO queue checked\" >> quickstart.log; echo queue_depth=0 workers=4"]
            timeout: 5s           # killed (SIGKILL, whole process group) after this long; at most the interval. Default: 5s.
            format: keyvalue      # number, keyvalue (a=1 b=2), influx (line protocol) or json. Default: number.
            metric: exec.value    # metric name for `number` (and a bare JSON number). Default: exec.value.
            prefix: app           # prefix for keyvalue and json keys: app.queue_depth. Default: exec.
            unit: count           # unit of every metric. Default: "".
        """#

    public mutating func decodeOwnKeys(_ mapping: ConfigMapping) {
        if mapping.require("command", hint: "e.g. 'command: [/usr/local/bin/read-sensor, --celsius]'") != nil,
            let command = mapping.nonEmptyStrings(
                "command", ifEmpty: "the command must not be empty", hint: "a list: the program, then its arguments")
        {
            self.command = command
        }
        if let timeout = mapping.duration("timeout", .greaterThan(.zero)) { self.timeout = timeout }
        if let format = mapping.enumeration("format", as: ExecConfig.Format.self) { self.format = format }
        if let metric = mapping.metricName("metric") { self.metric = metric }
        if let prefix = mapping.metricName("prefix") { self.prefix = prefix }
        if let unit = mapping.metricUnit("unit") { self.unit = unit }
    }
}
