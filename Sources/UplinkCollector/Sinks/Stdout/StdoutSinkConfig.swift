import UplinkConfig

/// `type: stdout`: one readable line per record on standard output.
public struct StdoutSinkConfig: SinkKindConfig, Equatable {
    public init() {}

    public static let typeName: String = "stdout"
    public static let summary: String = """
        Prints one readable line per record on standard output (the collector's own format, as `collector.stdout`). \
        Standard output is not transactional: after a crash the last batch may be printed again.
        """
    public static let keys: [DocumentedKey] = []
    public static let example: String = """
        - name: console
          type: stdout
        """

    public static func decode(_ mapping: ConfigMapping) -> Self? { Self() }

    public func makeSink(_ context: SinkContext) throws -> any ForwardingSink {
        StdoutForwardingSink(output: context.output)
    }
}
