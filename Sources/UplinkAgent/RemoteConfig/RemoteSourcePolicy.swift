import UplinkConfig
import UplinkCore
import UplinkSources

/// Whether the sources of remote documents fit the local file's `remote_config.allow`, and the sources as the agent
/// then runs them. Every refusal is a `not_allowed` issue at the offending key or value of its document
/// (`remote:<name>@<sha256 prefix>:LINE:COL`):
/// - a type not in `allow.source_types`;
/// - a `tail` pattern in `paths` not inside one of `allow.tail_paths` (`PathGlob.contains`, on the patterns);
/// - a `sysfs` `path` not matched by `allow.sysfs_paths`;
/// - a `journald` source without `units`, or with a unit (or a `_SYSTEMD_UNIT=` match) outside `allow.journald_units`;
/// - an `exec` command matching no `allow.exec` pattern (same length, `argv[0]` exact, `*` = any one argument);
/// - more than `allow.max_sources` remote sources, all documents together;
/// - an `interval` or `*_interval` written below `allow.min_interval`;
/// - a name used by a local source or by an earlier remote source.
///
/// Accepted `tail` sources get `TailConfig.allowedRealPaths` = `allow.tail_paths`: the real path of every file they
/// open is checked too, when it is opened.
public struct RemoteSourcePolicy: Sendable {
    /// `remote_config.allow` of the local file.
    public var allow: UplinkFile.RemoteConfigSection.Allow
    /// The names of the local file's sources.
    public var localSourceNames: Set<String>

    public init(allow: UplinkFile.RemoteConfigSection.Allow, localSourceNames: Set<String>) {
        self.allow = allow
        self.localSourceNames = localSourceNames
    }

    /// The policy of a local file: its `remote_config.allow` and its sources' names.
    public init(local: UplinkFile) {
        self.init(allow: local.remoteConfig.allow, localSourceNames: Set(local.sources.map(\.name)))
    }

    /// Checks the documents' sources, in the order given (the assignment's order); returns them as the agent runs them
    /// (tail sources restricted to `allow.tail_paths`), or every issue.
    public func check(_ documents: [RemoteDocument]) -> ConfigResult<[AgentConfiguration.NamedSource]> {
        var issues: [ConfigIssue] = []
        var accepted: [AgentConfiguration.NamedSource] = []
        var remoteNames: [String: String] = [:]
        var count = 0
        for document in documents {
            var documentIssues: [ConfigIssue] = []
            func refuse(_ node: ConfigNode, _ path: ConfigPath, _ message: String, hint: String? = nil) {
                documentIssues.append(ConfigIssue(
                    file: document.file, line: node.mark.line, column: node.mark.column, keyPath: path.description,
                    code: .notAllowed, message: message, hint: hint))
            }
            for item in document.sources {
                let source = item.source
                let nameNode = item.node["name"] ?? item.node
                count += 1
                if count == allow.maxSources + 1 {
                    refuse(
                        item.node, item.path,
                        "more than remote_config.allow.max_sources (\(allow.maxSources)) remote sources",
                        hint: "remote sources of all documents count together")
                }
                if localSourceNames.contains(source.name) {
                    refuse(
                        nameNode, item.path.appending("name"), "the name '\(source.name)' is used by a local source",
                        hint: "a remote document cannot replace or change a local source; rename it")
                } else if let first = remoteNames[source.name] {
                    refuse(
                        nameNode, item.path.appending("name"), "the name '\(source.name)' is used by a source of \(first)",
                        hint: "source names must be unique across all documents")
                } else {
                    remoteNames[source.name] = document.file
                }
                let kind = source.config.kind
                guard allow.sourceTypes.contains(kind) else {
                    let allowed = allow.sourceTypes.map(\.typeName)
                    refuse(
                        item.node["type"] ?? item.node, item.path.appending("type"),
                        "the type '\(kind.typeName)' is not in remote_config.allow.source_types",
                        hint: allowed.isEmpty
                            ? "the local file allows no remote source" : "allowed: " + allowed.joined(separator: ", "))
                    continue
                }
                checkIntervals(item, refuse)
                var config = source.config
                if var tail = config.settings(as: TailConfig.self) {
                    checkTail(item, refuse)
                    tail.allowedRealPaths = allow.tailPaths
                    config = SourceConfig(tail)
                } else if let sysfs = config.settings(as: SysfsConfig.self) {
                    if !allow.sysfsPaths.contains(where: { PathGlob($0).contains(PathGlob(sysfs.path)) }) {
                        refuse(
                            item.node["path"] ?? item.node, item.path.appending("path"),
                            "'\(sysfs.path)' is outside remote_config.allow.sysfs_paths", hint: listing(allow.sysfsPaths))
                    }
                } else if let journald = config.settings(as: JournaldConfig.self) {
                    checkJournald(item, journald, refuse)
                } else if let exec = config.settings(as: ExecConfig.self) {
                    if !allow.exec.contains(where: { Self.argv(exec.command, matches: $0) }) {
                        refuse(
                            item.node["command"] ?? item.node, item.path.appending("command"),
                            "the command \(Self.quoted(exec.command)) matches no remote_config.allow.exec pattern",
                            hint: allow.exec.isEmpty
                                ? "the local file allows no remote command"
                                : "allowed: " + allow.exec.map(Self.quoted).joined(separator: ", "))
                    }
                }
                accepted.append(.init(name: source.name, config: config))
            }
            issues += documentIssues.sortedInDocumentOrder()
        }
        return ConfigResult(value: accepted, issues: issues)
    }

    /// Whether `command` matches the `allow.exec` pattern `pattern`: the same length, the first element equal (an
    /// absolute path), every other equal or `*` in the pattern.
    public static func argv(_ command: [String], matches pattern: [String]) -> Bool {
        guard command.count == pattern.count, let program = command.first, program.hasPrefix("/"), program == pattern.first
        else { return false }
        return zip(command.dropFirst(), pattern.dropFirst()).allSatisfy { $1 == "*" || $0 == $1 }
    }

    // MARK: - Per kind

    private typealias Refuse = (ConfigNode, ConfigPath, String, String?) -> Void

    /// Every `interval` or `*_interval` the source writes (not the kinds' defaults) must be at least `min_interval`.
    private func checkIntervals(_ item: RemoteDocument.Source, _ refuse: Refuse) {
        for entry in item.node.entries ?? [] where entry.name == "interval" || entry.name.hasSuffix("_interval") {
            guard let text = entry.value.scalar?.value, let value = try? ConfigValueParsing.duration(text),
                value < allow.minInterval
            else { continue }
            refuse(
                entry.value, item.path.appending(entry.name),
                "'\(text)' is below remote_config.allow.min_interval (\(ConfigValueParsing.format(duration: allow.minInterval)))",
                nil)
        }
    }

    private func checkTail(_ item: RemoteDocument.Source, _ refuse: Refuse) {
        let allowed = allow.tailPaths.map(PathGlob.init)
        for (index, node) in (item.node["paths"]?.items ?? []).enumerated() {
            guard let pattern = node.scalar?.value,
                !allowed.contains(where: { $0.contains(PathGlob(pattern)) })
            else { continue }
            refuse(
                node, item.path.appending("paths").appending(index: index),
                "'\(pattern)' is not inside remote_config.allow.tail_paths", listing(allow.tailPaths))
        }
    }

    private func checkJournald(_ item: RemoteDocument.Source, _ journald: JournaldConfig, _ refuse: Refuse) {
        guard !journald.units.isEmpty else {
            refuse(
                item.node["units"] ?? item.node["type"] ?? item.node, item.path.appending("units"),
                "a remote journald source must name its units", "list them in 'units', within remote_config.allow.journald_units")
            return
        }
        let patterns = allow.journaldUnits.map(JournaldConfig.unitName)
        func allowed(_ unit: String) -> Bool {
            patterns.contains { PathGlob.matchesComponent(pattern: $0, name: JournaldConfig.unitName(unit)) }
        }
        for (index, node) in (item.node["units"]?.items ?? []).enumerated() {
            guard let unit = node.scalar?.value, !allowed(unit) else { continue }
            refuse(
                node, item.path.appending("units").appending(index: index),
                "the unit '\(unit)' is outside remote_config.allow.journald_units", listing(allow.journaldUnits))
        }
        // The same field again widens the filter (either value): a unit match must be allowed as well.
        for (index, node) in (item.node["matches"]?.items ?? []).enumerated() {
            guard let text = node.scalar?.value, case .success(let match) = JournaldMatch.parse(text),
                match.field == "_SYSTEMD_UNIT", !allowed(match.value)
            else { continue }
            refuse(
                node, item.path.appending("matches").appending(index: index),
                "the unit '\(match.value)' is outside remote_config.allow.journald_units", listing(allow.journaldUnits))
        }
    }

    private func listing(_ patterns: [String]) -> String {
        patterns.isEmpty ? "the local file allows none" : "allowed: " + patterns.joined(separator: ", ")
    }

    private static func quoted(_ argv: [String]) -> String {
        "[" + argv.map { "'\($0)'" }.joined(separator: ", ") + "]"
    }
}

/// What a box runs when it applies remote documents: its local file plus the documents' sources.
public enum RemoteConfiguration {
    /// Decodes remote documents (`RemoteDocument.decode` with the local file's `max_document_bytes`), checks them
    /// against the local file's policy (`RemoteSourcePolicy`) and returns the local file with their sources added
    /// after its own, in the order given; or every issue of every document. This is what `uplink validate --remote`
    /// runs, and what the agent runs before it applies documents.
    /// - Parameters:
    ///   - local: The local file, loaded and valid.
    ///   - documents: Each document's name, bytes and sha256 (hex), in assignment order.
    public static func merge(
        local: UplinkFile, documents: [(name: String, bytes: [UInt8], sha256: String)]
    ) -> ConfigResult<UplinkFile> {
        var issues: [ConfigIssue] = []
        if !local.remoteConfig.enabled {
            issues.append(ConfigIssue(
                file: local.path, line: 0, column: 0, keyPath: "remote_config.enabled", code: .notAllowed,
                message: "remote_config is not enabled, so remote documents are not applied",
                hint: "set remote_config.enabled: true in the local file"))
        }
        var decoded: [RemoteDocument] = []
        var documentIssues: [(file: String, issues: [ConfigIssue])] = []
        for document in documents {
            let result = RemoteDocument.decodeKeepingSources(
                name: document.name, bytes: document.bytes, sha256: document.sha256,
                maxBytes: local.remoteConfig.maxDocumentBytes)
            documentIssues.append((RemoteDocument.issueFile(name: document.name, sha256: document.sha256), result.issues))
            if let value = result.document { decoded.append(value) }
        }
        let checked = RemoteSourcePolicy(local: local).check(decoded)
        // Each document's issues together, in document order; the documents in the order given.
        var policyIssues = Dictionary(grouping: checked.issues, by: \.file)
        for (file, found) in documentIssues {
            issues += (found + (policyIssues.removeValue(forKey: file) ?? [])).sortedInDocumentOrder()
        }
        var merged = local
        merged.sources += checked.value ?? []
        return ConfigResult(value: merged, issues: issues)
    }
}
