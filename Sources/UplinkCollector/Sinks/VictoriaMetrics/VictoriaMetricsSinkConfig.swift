import UplinkConfig

/// `type: victoriametrics`: metric records into VictoriaMetrics' JSON line import.
public struct VictoriaMetricsSinkConfig: EndpointSinkConfig {
    /// `url`, `headers`, `compression` (default `gzip`: samples repeat their label sets and shrink about tenfold).
    public var endpoint: SinkEndpoint

    /// The configuration delivering to `endpoint` (`EndpointSinkConfig` adds `init(url:headers:compression:)`).
    public init(endpoint: SinkEndpoint) {
        self.endpoint = endpoint
    }

    /// `compression`'s default for this kind.
    public static let defaultCompression: SinkCompression = SinkCompression.gzip

    public static let typeName: String = "victoriametrics"
    public static let summary: String = """
        Metric records into VictoriaMetrics' JSON line import, `POST <url>/api/v1/import`, with the series names and \
        labels of docs/metrics.md; log records are skipped. Run VictoriaMetrics with `-dedup.minScrapeInterval=1ms` so \
        a batch resent after a crash collapses.
        """
    public static let keys: [DocumentedKey] = SinkEndpoint.keys(
        url: "Single node `http://vm:8428`, or cluster `http://vminsert:8480/insert/<tenant>/prometheus`; records go to `<url>/api/v1/import`.",
        defaultCompression: defaultCompression)
    public static let example: String = """
        - name: metrics
          type: victoriametrics
          url: http://127.0.0.1:8428
          headers: { X-Scope: fleet }
          compression: gzip
          batch_max_bytes: 1MiB
          batch_linger: 1s
          timeout: 30s
          backoff: { initial: 250ms, multiplier: 2, max: 30s }
        """

    public func makeSink(_ context: SinkContext) throws -> any ForwardingSink {
        VictoriaMetricsSink(endpoint, timeout: context.timeout, client: context.client)
    }
}
