import UplinkConfig
import UplinkCore
import UplinkSources

/// A remote configuration document, decoded: the sources it adds to the local file's, each with where it was
/// written. What a document may hold at all is checked here; whether its sources fit the local file's
/// `remote_config.allow` is `RemoteSourcePolicy`'s job, and `RemoteConfiguration.merge` does both for a box.
///
/// A document is an ordinary uplink YAML file holding only `sources:`. Refused, each as a `not_allowed` issue
/// at the offending key or value, in `FILE:LINE:COL: key: message` form with `FILE` = `remote:<name>@<first 12 hex
/// digits of its sha256>`:
/// - more than `maxBytes` bytes (before parsing; an issue without a position);
/// - any top-level key but `sources` (`uplink`, `agent`, `buffer`, `collector`, `remote_config`, …);
/// - `${` anywhere: a remote document gets no environment expansion (`ConfigParseOptions.untrusted`);
/// - YAML anchors, aliases and merge keys, even harmless ones;
/// - a key naming a token, password or secret, wherever it is;
/// - a relative path (or a `.` or `..` component) in any path-valued key of a source (the kinds' keys documented as
///   paths or glob patterns; a `tail` `exclude` pattern without `/` is a file name pattern and stays allowed), and a
///   relative `exec` program;
/// - the `generator` kind.
/// The sources themselves go through the local file's decoders (`SourceDecoding`), with the same messages.
public struct RemoteDocument: Sendable {
    /// One source of the document, with its item in the document.
    public struct Source: Sendable {
        /// The source as the agent runs it (before `RemoteSourcePolicy` restricts it).
        public var source: AgentConfiguration.NamedSource
        /// Its mapping in the document (marks for the policy's issues).
        public var node: ConfigNode
        /// Its path in the document, `sources[2]`.
        public var path: ConfigPath
    }

    /// The document's name (from the collector's manifest, or the file name for `uplink validate --remote`).
    public var name: String
    /// The sha256 of its bytes, 64 lowercase hex digits.
    public var sha256: String
    /// The name its issues carry: `remote:<name>@<first 12 hex digits of sha256>`.
    public var file: String
    /// Its sources, in document order.
    public var sources: [Source]

    /// The `FILE` of a document's issues: `remote:<name>@<first 12 hex digits of sha256>`.
    public static func issueFile(name: String, sha256: String) -> String {
        "remote:\(name)@\(sha256.lowercased().prefix(12))"
    }

    /// Decodes a remote document and applies the document rules (see the type).
    /// - Parameters:
    ///   - name: The document's name.
    ///   - bytes: Its bytes, as received.
    ///   - sha256: The sha256 of `bytes` in hex, computed by the caller (which checked it against the manifest).
    ///   - maxBytes: `remote_config.max_document_bytes`: a larger document is refused without being parsed.
    /// - Returns: The document, or every issue.
    public static func decode(name: String, bytes: [UInt8], sha256: String, maxBytes: Int) -> ConfigResult<RemoteDocument> {
        let decoded = decodeKeepingSources(name: name, bytes: bytes, sha256: sha256, maxBytes: maxBytes)
        return ConfigResult(value: decoded.document, issues: decoded.issues)
    }

    /// `decode`, but with the sources that did decode also when the document has issues, so that the policy can
    /// report its refusals as well (a box still applies nothing of such a document).
    static func decodeKeepingSources(
        name: String, bytes: [UInt8], sha256: String, maxBytes: Int
    ) -> (document: RemoteDocument?, issues: [ConfigIssue]) {
        let file = issueFile(name: name, sha256: sha256)
        guard bytes.count <= maxBytes else {
            return (nil, [ConfigIssue(
                file: file, line: 0, column: 0, keyPath: "", code: .notAllowed,
                message: "the document has \(bytes.count) bytes, more than remote_config.max_document_bytes (\(maxBytes)); "
                    + "it was not parsed",
                hint: "split it into several documents, or raise max_document_bytes in the local file")])
        }
        let decoder = ConfigDecoder(document: ConfigDocument.parse(bytes: bytes, file: file, options: .untrusted))
        guard let root = decoder.rootMapping(allowedKeys: nil) else { return (nil, decoder.issues) }
        for entry in root.entries where entry.name != "sources" {
            decoder.report(
                .notAllowed, at: entry.key.mark, path: root.path(entry.name),
                "'\(entry.name)' is not allowed in a remote document, which may hold only 'sources'",
                hint: "agent, buffer, uplink, collector and remote_config are set by the local file alone")
        }
        guard root.contains("sources") else {
            decoder.report(
                .missingKey, at: root.node.mark, path: root.path("sources"), "a remote document needs 'sources'",
                hint: "e.g. 'sources: [{ name: app-cpu, type: cpu }]'")
            return (nil, decoder.issues)
        }
        if let list = root.value("sources") { reportSecrets(in: list, path: root.path("sources"), decoder) }
        // `sources: []` is how a fleet takes its sources off a box: a document that adds none, applied and proven
        // like any other (an unassigned box keeps what it runs, see `RemoteConfigAgent`).
        let decoded = SourceDecoding.decodeSources(root, mayBeEmpty: true)
        var items: [String: ConfigElement] = [:]
        // Not `root.list`: a `sources` that is no list was reported by `decodeSources` already.
        let listed = (root.value("sources")?.items ?? []).enumerated().map {
            ConfigElement(node: $1, path: root.path("sources").appending(index: $0))
        }
        for item in listed {
            checkItem(item, decoder)
            if let name = item.node["name"]?.scalar?.value, items[name] == nil { items[name] = item }
        }
        let sources = decoded.compactMap { source -> Source? in
            guard let item = items[source.name] else { return nil }
            return Source(source: source, node: item.node, path: item.path)
        }
        return (RemoteDocument(name: name, sha256: sha256, file: file, sources: sources), decoder.issues)
    }

    /// Why `path` cannot be a path (or pattern) of a remote document or of the allow-list, or nil: it must be absolute
    /// and have no `.` or `..` component.
    public static func pathProblem(_ path: String) -> String? {
        guard path.hasPrefix("/") else { return "'\(path)' is a relative path; only absolute paths are allowed" }
        if path.split(separator: "/").contains(where: { $0 == "." || $0 == ".." }) {
            return "'\(path)' has a '.' or '..' component"
        }
        return nil
    }

    // MARK: - Rules

    /// Key names refused anywhere in a source: tokens, passwords and other secrets have no place in a remote document.
    private static func isSecretKey(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return ["token", "password", "secret"].contains { lowered.contains($0) }
    }

    private static func reportSecrets(in node: ConfigNode, path: ConfigPath, _ decoder: ConfigDecoder) {
        switch node.content {
        case .scalar: return
        case .sequence(let items):
            for (index, item) in items.enumerated() { reportSecrets(in: item, path: path.appending(index: index), decoder) }
        case .mapping(let entries):
            for entry in entries {
                if isSecretKey(entry.name) {
                    decoder.report(
                        .notAllowed, at: entry.key.mark, path: path.appending(entry.name),
                        "'\(entry.name)': a remote document cannot set a token or another secret")
                }
                reportSecrets(in: entry.value, path: path.appending(entry.name), decoder)
            }
        }
    }

    /// The kind-dependent rules for one item of `sources`: no generator, no relative paths.
    private static func checkItem(_ item: ConfigElement, _ decoder: ConfigDecoder) {
        guard let typeNode = item.node["type"], let typeName = typeNode.scalar?.value,
            let kind = SourceKind(typeName: typeName)
        else { return }
        if kind == GeneratorConfig.kind {
            decoder.report(
                .notAllowed, at: typeNode.mark, path: item.path.appending("type"),
                "the generator kind is not allowed in a remote document (it exists for load tests)")
            return
        }
        for key in kind.configType.keys where isPathValued(key) {
            guard let value = item.node[key.name] else { continue }
            let keyPath = item.path.appending(key.name)
            let values: [(ConfigNode, ConfigPath)] =
                switch value.content {
                case .sequence(let items): items.enumerated().map { ($1, keyPath.appending(index: $0)) }
                default: [(value, keyPath)]
                }
            for (node, path) in values {
                guard let text = node.scalar?.value, !node.isNull, node.scalar?.substitutionFailed != true else { continue }
                // A `tail` exclude pattern without `/` is matched against file names, not a path.
                if kind == TailConfig.kind, key.name == "exclude", !text.contains("/") { continue }
                if let problem = pathProblem(text) {
                    decoder.report(.notAllowed, at: node.mark, path: path, problem, hint: "write the absolute path")
                }
            }
        }
        if kind == ExecConfig.kind, let program = item.node["command"]?.items?.first, let text = program.scalar?.value,
            program.scalar?.substitutionFailed != true, !text.hasPrefix("/")
        {
            decoder.report(
                .notAllowed, at: program.mark, path: item.path.appending("command").appending(index: 0),
                "'\(text)' is a relative program name; a remote exec command must start with an absolute path",
                hint: "remote commands are not looked up in PATH")
        }
    }

    /// Whether a kind's key holds paths: documented as a path, a list of paths, or glob patterns.
    private static func isPathValued(_ key: DocumentedKey) -> Bool {
        !key.name.contains(".") && (key.type.contains("path") || key.type.contains("glob"))
    }
}
