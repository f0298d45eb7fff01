import UplinkConfig
import UplinkCore
import UplinkSources

/// Reads the `sources` list: each item's `name` and `type`, then the keys of its kind (`SourceKindConfig`, one
/// folder per kind in `UplinkSources`, all listed in `SourceKind.allCases`).
enum SourceDecoding {
    /// Keys every source has.
    static let commonKeys = ["name", "type"]

    /// Longest source name accepted.
    static let maximumNameLength = 64

    /// The sources of the root mapping's `sources` list, in order. Reported: a missing or empty list (an empty one
    /// only unless `mayBeEmpty`), items that are not mappings, missing `name` or `type`, an unknown `type` (with the
    /// closest known type), a name that is not `[A-Za-z0-9._-]{1,64}`, a name used twice (at the second use, naming
    /// the first's line), unknown keys for the source's kind, and each key's own problems.
    static func decodeSources(_ root: ConfigMapping, mayBeEmpty: Bool = false) -> [AgentConfiguration.NamedSource] {
        let decoder = root.decoder
        guard let entry = root.entry("sources") else { return [] }
        guard let elements = root.list("sources") else {
            if entry.value.isNull { reportEmpty(at: entry.value.mark, root: root) }
            return []
        }
        if elements.isEmpty {
            if !mayBeEmpty { reportEmpty(at: entry.value.mark, root: root) }
            return []
        }
        let typeNames = SourceKind.allCases.map(\.typeName)
        var names = ConfigItemNames(of: "source")
        var sources: [AgentConfiguration.NamedSource] = []
        for element in elements {
            guard let mapping = decoder.mapping(element.node, at: element.path, allowedKeys: nil) else { continue }
            let kind: SourceKind? = mapping.require("type", hint: "known types: " + typeNames.joined(separator: ", "))
                .flatMap { node in
                    guard let name = decoder.string(node, at: mapping.path("type")) else { return nil }
                    guard let kind = SourceKind(typeName: name) else {
                        decoder.report(
                            .invalidValue, at: node.mark, path: mapping.path("type"), "unknown source type '\(name)'",
                            hint: ConfigSuggestions.hint(for: name, among: typeNames, listing: "known types"))
                        return nil
                    }
                    return kind
                }
            let name = names.take(mapping, missing: "every source needs a unique name, e.g. 'name: cpu'") { name in
                nameProblem(name).map { problem in
                    .failure(ConfigValueError(message: problem, hint: "use letters, digits, '.', '_' and '-'"))
                } ?? .success(name)
            }
            // Without a known type the allowed keys are unknown, so only a known kind's keys are checked.
            guard let kind else { continue }
            mapping.rejectUnknownKeys(allowed: commonKeys + kind.configType.allowedKeys)
            let config = SourceConfig(kind.configType.decode(mapping))
            if let name { sources.append(.init(name: name, config: config)) }
        }
        return sources
    }

    /// Why `name` cannot name a source, or nil.
    static func nameProblem(_ name: String) -> String? {
        if name.count > maximumNameLength {
            return "the source name is longer than \(maximumNameLength) characters"
        }
        let allowed = name.utf8.allSatisfy(PortableName.isPortable)
        return allowed ? nil : "invalid source name '\(name)'"
    }

    private static func reportEmpty(at mark: ConfigMark, root: ConfigMapping) {
        root.decoder.report(
            .missingKey, at: mark, path: root.path("sources"), "at least one source is required",
            hint: "e.g. 'sources: [{ name: cpu, type: cpu }]'")
    }
}
