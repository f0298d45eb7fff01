import UplinkConfig

/// `type: jsonl`: the log's stored lines appended, unchanged, to a file.
public struct JSONLSinkConfig: SinkKindConfig, Equatable {
    /// `path` (path, relative to the configuration file): the file lines are appended to. Default: nil, meaning
    /// `<data_dir>/records.jsonl`.
    public var path: String?

    public init(path: String? = nil) {
        self.path = path
    }

    public static let typeName: String = "jsonl"
    public static let summary: String = """
        Appends the log's lines, unchanged, to a file: one JSON object per record, with `agent`, `epoch` and `seq` \
        (the record's idempotent key) spliced in front. After a crash the last batch may be appended twice; readers \
        deduplicate on (`agent`, `epoch`, `seq`).
        """
    public static let keys: [DocumentedKey] = [
        DocumentedKey(
            "path", "path", default: "`<data_dir>/records.jsonl`",
            "File the log's lines are appended to, unchanged (relative to the configuration file)."),
    ]
    public static let example: String = """
        - name: archive
          type: jsonl
          path: ./collector-data/archive.jsonl
        """

    public static func decode(_ mapping: ConfigMapping) -> Self? {
        Self(path: mapping.string("path").map { ConfigFiles.resolve($0, relativeTo: mapping.decoder.baseDirectory) })
    }

    public func makeSink(_ context: SinkContext) throws -> any ForwardingSink {
        try JSONLForwardingSink(path: path ?? context.collector.recordsFile)
    }
}
