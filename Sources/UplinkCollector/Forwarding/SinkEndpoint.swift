import UplinkConfig

/// How a sink encodes its request bodies (`collector.sinks[].compression`).
public enum SinkCompression: String, Sendable, Equatable, CaseIterable {
    /// `Content-Encoding: gzip` (zlib level 1). VictoriaMetrics' import, ClickHouse's HTTP interface and most HTTP
    /// ingest endpoints accept it.
    case gzip
    /// Bodies as they are.
    case none
}

/// An HTTP header sent with every request of a sink.
public struct SinkHeader: Sendable, Equatable {
    public var name: String
    public var value: String
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// The keys every sink that delivers over HTTP has: `url`, `headers`, `compression`.
public struct SinkEndpoint: Sendable, Equatable {
    /// `url` (required, `http://` or `https://`): the store's base URL.
    public var url: String
    /// `headers` (mapping of strings): extra request headers, in order. Default none.
    public var headers: [SinkHeader]
    /// `compression` (`gzip` or `none`): the request bodies' encoding. Default: the kind's (`defaultCompression`).
    public var compression: SinkCompression

    public init(url: String, headers: [SinkHeader] = [], compression: SinkCompression) {
        self.url = url
        self.headers = headers
        self.compression = compression
    }

    /// `url` without trailing slashes.
    var baseURL: String {
        var base = url
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }

    /// The three keys' rows for a kind's table: `url` described by `urlDescription`, `compression` defaulting to
    /// `defaultCompression`.
    static func keys(url urlDescription: String, defaultCompression: SinkCompression) -> [DocumentedKey] {
        [
            DocumentedKey("url", "URL", default: DocumentedKey.required, urlDescription),
            DocumentedKey(
                "headers", "mapping of strings", default: "none", "Extra request headers (e.g. an API key for a gateway)."),
            DocumentedKey(
                "compression", "`gzip` or `none`", default: "`\(defaultCompression.rawValue)`",
                "Request bodies gzipped (zlib level 1, `Content-Encoding: gzip`)."),
        ]
    }

    /// Reads `url`, `headers` and `compression` of a sink's mapping; nil when `url` is missing or unusable
    /// (reported).
    static func decode(_ mapping: ConfigMapping, defaultCompression: SinkCompression) -> SinkEndpoint? {
        let url = mapping.require("url", hint: "the store's URL, e.g. 'http://127.0.0.1:8428'").flatMap { _ in mapping.url("url") }
        var headers: [SinkHeader] = []
        if let mapped = mapping.mapping("headers", allowedKeys: nil) {
            for entry in mapped.entries {
                guard let value = mapping.decoder.string(entry.value, at: mapped.path(entry.name)) else { continue }
                headers.append(SinkHeader(name: entry.name, value: value))
            }
        }
        let compression = mapping.enumeration("compression", as: SinkCompression.self) ?? defaultCompression
        guard let url else { return nil }
        return SinkEndpoint(url: url, headers: headers, compression: compression)
    }

    /// What is wrong with an endpoint built in code, or nil.
    func problem() -> String? {
        url.hasPrefix("http://") || url.hasPrefix("https://") ? nil : "'url' must be an http:// or https:// URL"
    }
}

/// A sink kind whose only keys are those of its `SinkEndpoint` (`http`, `victoriametrics`): the kind supplies its
/// name, documentation, default compression and sink; building, decoding and checking the endpoint are shared here.
public protocol EndpointSinkConfig: SinkKindConfig, Equatable {
    /// `url`, `headers`, `compression`.
    var endpoint: SinkEndpoint { get }

    /// The configuration delivering to `endpoint`.
    init(endpoint: SinkEndpoint)

    /// `compression`'s default for this kind.
    static var defaultCompression: SinkCompression { get }
}

extension EndpointSinkConfig {
    /// The configuration delivering to `url` with `headers`, its bodies encoded as `compression` (by default the
    /// kind's).
    public init(url: String, headers: [SinkHeader] = [], compression: SinkCompression = Self.defaultCompression) {
        self.init(endpoint: SinkEndpoint(url: url, headers: headers, compression: compression))
    }

    /// The endpoint's keys (`SinkEndpoint.decode`); nil when `url` is missing or unusable.
    public static func decode(_ mapping: ConfigMapping) -> Self? {
        SinkEndpoint.decode(mapping, defaultCompression: defaultCompression).map { Self(endpoint: $0) }
    }

    /// The endpoint's problem (`SinkEndpoint.problem`), or nil.
    public func problem() -> String? { endpoint.problem() }
}
