import AsyncHTTPClient
import Logging

/// The one place that maps a sink type to its implementation.
enum SinkRegistry {
    static func make(
        _ sink: SinkConfiguration, configuration: CollectorConfiguration, output: any CollectorOutput,
        client: HTTPClient, logger: Logger
    ) throws -> any ForwardingSink {
        switch sink.kind {
        case .jsonl: try JSONLForwardingSink(path: sink.path ?? configuration.recordsFile)
        case .stdout: StdoutForwardingSink(output: output)
        case .victoriametrics: VictoriaMetricsSink(sink, client: client)
        case .clickhouse: ClickHouseSink(sink, client: client, logger: logger)
        case .http: HTTPSink(sink, client: client)
        }
    }
}
