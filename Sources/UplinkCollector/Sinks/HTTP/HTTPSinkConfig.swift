import UplinkConfig

/// `type: http`: NDJSON batches POSTed to a URL.
public struct HTTPSinkConfig: EndpointSinkConfig {
    /// `url`, `headers`, `compression` (default `none`).
    public var endpoint: SinkEndpoint

    /// The configuration delivering to `endpoint` (`EndpointSinkConfig` adds `init(url:headers:compression:)`).
    public init(endpoint: SinkEndpoint) {
        self.endpoint = endpoint
    }

    /// `compression`'s default for this kind.
    public static let defaultCompression: SinkCompression = SinkCompression.none

    public static let typeName: String = "http"
    public static let summary: String = """
        Each batch POSTed to `url` as NDJSON (`Content-Type: application/x-ndjson` unless `headers` sets one), one \
        stored line (with `agent`, `epoch`, `seq`) per record. 2xx is success; 400, 413, 415 and 422 send the batch \
        to the dead-letter file; anything else is retried.
        """
    public static let keys: [DocumentedKey] = SinkEndpoint.keys(url: "The URL each batch is POSTed to.", defaultCompression: defaultCompression)
    public static let example: String = """
        - name: other-store
          type: http
          url: https://ingest.example/v1/records
          headers: { X-Api-Key: replace-me }
          compression: none
        """

    public func makeSink(_ context: SinkContext) throws -> any ForwardingSink {
        HTTPSink(endpoint, timeout: context.timeout, client: context.client)
    }
}
