/// The sink kinds, in the order docs/configuration.md and examples.yaml show them. Adding one: a folder
/// `Sinks/<Kind>/` with its `SinkKindConfig` and `ForwardingSink`, and its line here (docs/architecture.md,
/// "Adding a sink").
public enum SinkRegistry {
    /// Every kind `collector.sinks[].type` accepts.
    public static let kinds: [any SinkKindConfig.Type] = [
        JSONLSinkConfig.self,
        StdoutSinkConfig.self,
        VictoriaMetricsSinkConfig.self,
        ClickHouseSinkConfig.self,
        HTTPSinkConfig.self,
    ]

    /// The kind named `typeName`, or nil.
    public static func kind(named typeName: String) -> (any SinkKindConfig.Type)? {
        kinds.first { $0.typeName == typeName }
    }
}
