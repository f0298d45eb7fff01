import UplinkConfig

/// The parts of docs/configuration.md and examples.yaml that are assembled from the sink kinds (`SinkKindConfig`):
/// the keys every sink has, a section per kind with its summary and key table, and the `collector.sinks` list of
/// the example (commented out there: without `sinks` the collector keeps records.jsonl and standard output).
///
/// Both files hold the assembled text between a begin and an end marker line. `SinkDocumentationTests` fails when
/// the text there differs, and rewrites it when run with `UPLINK_WRITE_GENERATED_DOCS=1`.
public enum SinkDocumentation {
    /// The marker lines around the generated part of docs/configuration.md.
    public static let markdownMarkers = (
        begin: "<!-- BEGIN sink kinds: generated from each kind's SinkKindConfig (see Sources/UplinkCollector/Forwarding/SinkRegistry.swift) -->",
        end: "<!-- END sink kinds -->"
    )

    /// The marker lines around the generated part of examples.yaml (the commented-out `collector.sinks` list).
    public static let exampleMarkers = (
        begin: "  # BEGIN sink kinds: one example per kind, generated from Sources/UplinkCollector/Sinks/<Kind>/<Kind>SinkConfig.swift",
        end: "  # END sink kinds"
    )

    /// The keys every sink has, then a section per kind, in the order of `SinkRegistry.kinds`.
    public static func markdown() -> String {
        var parts = ["Keys of every sink:\n\n" + GeneratedDocumentation.table(SinkConfiguration.commonKeys)]
        for kind in SinkRegistry.kinds {
            var section = "#### `type: \(kind.typeName)`\n\n\(kind.summary)"
            section += kind.keys.isEmpty ? "\n\nNo keys of its own." : "\n\n" + GeneratedDocumentation.table(kind.keys)
            parts.append(section)
        }
        return parts.joined(separator: "\n\n")
    }

    /// The commented-out `sinks:` list of examples.yaml, one item per kind (its `example`), indented under
    /// `collector:`.
    public static func examples() -> String {
        let items = SinkRegistry.kinds.flatMap { kind in
            kind.example.split(separator: "\n", omittingEmptySubsequences: false).map { "  #   " + $0 }
        }
        return (["  # sinks:"] + items).joined(separator: "\n")
    }

    /// The YAML of a `collector` section whose `sinks` list holds every kind's example, uncommented: what
    /// `examples()` shows, as a file would say it.
    public static func exampleSection() -> String {
        let items = SinkRegistry.kinds.flatMap { kind in
            kind.example.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }
        }
        return (["collector:", "  sinks:"] + items).joined(separator: "\n") + "\n"
    }
}
