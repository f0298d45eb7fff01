/// How the configuration's sink settings map onto the one record path: storage → log → forwarders.
extension CollectorConfiguration {
    /// The name of the implicit sink of type `stdout` that `stdoutSink` stands for (its cursor is
    /// `<data_dir>/cursors/collector.stdout`, its statistics and series carry this name).
    public static let implicitStdoutSinkName = "collector.stdout"

    /// Where the log is. Without `sinks` and with `jsonlSink` on, `records.jsonl` is the log itself (one file, never
    /// rolled or deleted), so the implicit `jsonl` sink costs nothing and every record is written to disk once;
    /// otherwise the log is the segments under `log/`.
    var logLayout: CollectorLog.Layout {
        sinks == nil && jsonlSink ? .single(path: recordsFile) : .segments(directory: logDirectory)
    }

    /// The sinks forwarders deliver the log to: `sinks` when set; otherwise the implicit sinks of `stdoutSink` and
    /// `jsonlSink`. The `jsonl` one is the log itself (`logLayout`) and needs no forwarder; the `stdout` one prints
    /// as soon as records are in the log (no linger).
    var forwardedSinks: [SinkConfiguration] {
        if let sinks { return sinks }
        guard stdoutSink else { return [] }
        return [SinkConfiguration(name: Self.implicitStdoutSinkName, kind: StdoutSinkConfig(), batchLinger: .zero)]
    }
}
