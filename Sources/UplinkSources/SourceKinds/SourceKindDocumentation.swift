import UplinkConfig

/// The parts of docs/configuration.md and examples.yaml that are assembled from the kinds (`SourceKindConfig`): the
/// `sources` reference, one section per kind with its summary and key table, and the `sources` list of the example.
///
/// Both files hold the assembled text between a begin and an end marker line. `SourceKindDocumentationTests` fails
/// when the text there differs, and rewrites it when run with `UPLINK_WRITE_GENERATED_DOCS=1`.
public enum SourceKindDocumentation {
    /// The marker lines around the generated part of docs/configuration.md.
    public static let markdownMarkers = (
        begin: "<!-- BEGIN source kinds: generated from each kind's SourceKindConfig (see Sources/UplinkSources/Registry.swift) -->",
        end: "<!-- END source kinds -->"
    )

    /// The marker lines around the generated part of examples.yaml (inside its `sources:` list).
    public static let exampleMarkers = (
        begin: "  # BEGIN source kinds: one example per kind, generated from Sources/UplinkSources/<Kind>/<Kind>Config+Kind.swift",
        end: "  # END source kinds"
    )

    /// The `sources` reference of docs/configuration.md: the keys every source has, those every sensor has, and a
    /// section per kind, in the order of `kinds`.
    public static func markdown(kinds: [SourceKind] = SourceKind.allCases) -> String {
        let typeNames = kinds.map { "`\($0.typeName)`" }
        let sensors = kinds.filter(\.isSensor).map { "`\($0.typeName)`" }
        var parts = [
            """
            A list; each item is one source. Every source has:

            \(GeneratedDocumentation.table([
                SourceKey(
                    "name", "string", default: SourceKey.required,
                    "Unique among the sources; labels every record and metric of the source. Letters, digits, `.`, `_`, `-`; "
                        + "at most 64 characters."),
                SourceKey(
                    "type", GeneratedDocumentation.list(typeNames, conjunction: "or"), default: SourceKey.required,
                    "The kind of source; decides which other keys are allowed."),
            ]))
            """,
            """
            ### Keys every sensor has

            Every sensor kind (\(GeneratedDocumentation.list(sensors, conjunction: "and"))) takes these keys.
            Metric names and units follow [metrics.md](metrics.md).

            \(GeneratedDocumentation.table(SensorSchedule.keys))

            A sensor whose files do not exist on this machine (no hwmon chips in a VM, no battery on a server) logs one warning
            when it starts and stops; the agent goes on. Malformed lines are skipped, counted and logged once.
            """,
        ]
        for kind in kinds {
            let type = kind.configType
            let ownKeys = kind.isSensor ? type.keys.filter { !SensorSchedule.keys.contains($0) } : type.keys
            var section = "### `type: \(type.typeName)`\n\n\(type.summary)\n\n\(GeneratedDocumentation.table(ownKeys))"
            if kind.isSensor {
                section += "\n\nAnd the [keys every sensor has](#keys-every-sensor-has): `interval`, `jitter`, `tags`."
            }
            parts.append(section)
        }
        return parts.joined(separator: "\n\n")
    }

    /// The items of the `sources` list of examples.yaml: every kind's `example`, in the order of `kinds`.
    public static func examples(kinds: [SourceKind] = SourceKind.allCases) -> String {
        let others = kinds.filter { !$0.isSensor }.map(\.typeName)
        let preamble = """
              # Every sensor (every kind but \(GeneratedDocumentation.list(others, conjunction: "and"))) takes `interval` (default 10s),
              # `jitter` (a random delay after each aligned tick, below the interval; default 0s) and `tags` (strings added
              # to every metric; default none).
            """
        return ([preamble] + kinds.map { $0.configType.example }).joined(separator: "\n\n")
    }
}

extension SourceKind {
    /// Whether the kind is a sensor: it samples on a `SensorSchedule` (keys `interval`, `jitter`, `tags`).
    public var isSensor: Bool { configType is any PeriodicSensorConfig.Type }
}
