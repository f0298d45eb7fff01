import UplinkConfig
import UplinkCore
import UplinkRemoteConfig
import UplinkSources

extension UplinkFile {
    /// The `remote_config` section: whether this agent takes source documents from its collector, and what they may
    /// do (`allow`). It exists in the local file only: a remote document can never set it (see `RemoteDocument`).
    /// Off by default. docs/configuration.md, "remote_config"; the key table there is generated from `documentedKeys`.
    public struct RemoteConfigSection: Sendable, Equatable {
        /// `remote_config.enabled` (bool): fetch and apply remote source documents. Default `false`.
        public var enabled: Bool
        /// `remote_config.poll_interval` (duration, at least `30s`): how often the agent asks for documents when no
        /// stream tells it of a change; the poller adds ±10 % jitter to every wait. A failed look is retried sooner,
        /// on `RemoteConfigAgent.retryBackoff`, capped at this. Default `5m`.
        public var pollInterval: Duration
        /// `remote_config.probation` (duration, > 0, at most `1h`): how long newly applied remote sources must stay
        /// healthy before the set becomes the last-known-good one; a failure within it rolls back. Default `60s`.
        public var probation: Duration
        /// `remote_config.max_document_bytes` (size, `1KiB` to `16MiB`): a larger document is refused before it is
        /// parsed (and its download stopped). Default `1MiB`.
        public var maxDocumentBytes: Int
        /// `remote_config.trusted_keys` (list of absolute paths): files holding the Ed25519 public keys a document's
        /// signature may be made with (several: key rotation). Each must be readable when the file is loaded.
        /// Default: none.
        public var trustedKeys: [String]
        /// The keys in `trustedKeys`, read when the file was loaded (each with its own key id).
        public var signingKeys: [SigningKeyFile.TrustedKey] = []
        /// `remote_config.require_signature` (bool): refuse documents without a valid signature by one of
        /// `trusted_keys` (a document the collector serves without an envelope included). `false`: documents without
        /// an envelope are accepted (vouched for by the manifest's digest alone, with no serial and so no replay
        /// protection), and an envelope that comes with one must still name it. With `enabled: true` and `true` here,
        /// `trusted_keys` must not be empty. Default `true`.
        public var requireSignature: Bool
        /// `remote_config.labels` (mapping of strings to strings): this agent's labels, reported to the collector and
        /// checked against a document's audience. Default: none.
        public var labels: [String: String]
        /// `remote_config.allow`: what a remote document may configure (see `Allow`). Default: nothing.
        public var allow: Allow

        public init(
            enabled: Bool = false, pollInterval: Duration = .seconds(300), probation: Duration = .seconds(60),
            maxDocumentBytes: Int = 1 << 20, trustedKeys: [String] = [], requireSignature: Bool = true,
            labels: [String: String] = [:], allow: Allow = Allow()
        ) {
            self.enabled = enabled
            self.pollInterval = pollInterval
            self.probation = probation
            self.maxDocumentBytes = maxDocumentBytes
            self.trustedKeys = trustedKeys
            self.requireSignature = requireSignature
            self.labels = labels
            self.allow = allow
        }

        /// `remote_config.allow`: the allow-list every remote source must fit. Empty lists allow nothing.
        public struct Allow: Sendable, Equatable {
            /// `allow.source_types` (list of source types, not `generator`): the kinds a remote source may be.
            /// Default: none (no remote source at all).
            public var sourceTypes: [SourceKind]
            /// `allow.tail_paths` (list of absolute glob patterns, the `tail` syntax): every pattern of a remote
            /// `tail` source's `paths` must lie inside one of these (checked on the patterns), and the real path of
            /// every file it opens (symbolic links resolved) must match one (checked when the file is opened).
            /// Default: none.
            public var tailPaths: [String]
            /// `allow.sysfs_paths` (list of absolute glob patterns): the `path` of a remote `sysfs` source must match
            /// one. Default: none.
            public var sysfsPaths: [String]
            /// `allow.journald_units` (list of unit name patterns, `*` and `?`; `.service` added to a name without a
            /// `.`): a remote `journald` source must list `units`, each matching one of these. Default: none.
            public var journaldUnits: [String]
            /// `allow.exec` (list of `{ argv: [...] }`): the exact command lines a remote `exec` source may run. The
            /// first element is an absolute path, matched exactly; `*` stands for any one argument; the lengths must
            /// be equal. Default: none (no remote `exec`).
            public var exec: [[String]]
            /// `allow.max_sources` (integer, 0 to 1024): most remote sources, all documents together. Default `32`.
            public var maxSources: Int
            /// `allow.min_interval` (duration, > 0): smallest `interval` (and `*_interval`) a remote source may set.
            /// Default `1s`.
            public var minInterval: Duration

            public init(
                sourceTypes: [SourceKind] = [], tailPaths: [String] = [], sysfsPaths: [String] = [],
                journaldUnits: [String] = [], exec: [[String]] = [], maxSources: Int = 32, minInterval: Duration = .seconds(1)
            ) {
                self.sourceTypes = sourceTypes
                self.tailPaths = tailPaths
                self.sysfsPaths = sysfsPaths
                self.journaldUnits = journaldUnits
                self.exec = exec
                self.maxSources = maxSources
                self.minInterval = minInterval
            }

            static let keys = [
                "source_types", "tail_paths", "sysfs_paths", "journald_units", "exec", "max_sources", "min_interval",
            ]
        }

        static let keys = [
            "enabled", "poll_interval", "probation", "max_document_bytes", "trusted_keys", "require_signature", "labels",
            "allow",
        ]

        /// Smallest `poll_interval` accepted.
        public static let minimumPollInterval: Duration = .seconds(30)
        /// Largest `probation` accepted.
        public static let maximumProbation: Duration = .seconds(3600)
        /// Smallest and largest `max_document_bytes` accepted.
        public static let documentBytesRange = (minimum: 1024, maximum: ConfigDocument.maximumFileBytes)
        /// Largest `allow.max_sources` accepted.
        public static let maximumSources = 1024
        /// Most `labels`: a collector refuses an `Uplink-Labels` header with more.
        public static let maximumLabels = AgentLabels.maximumCount

        /// The rows of the key table in docs/configuration.md, "remote_config" (a test keeps the table in step).
        public static let documentedKeys: [DocumentedKey] = [
            DocumentedKey("enabled", "bool", default: "`false`", "Fetch source documents from the collector and apply them."),
            DocumentedKey(
                "poll_interval", "duration, ≥ `30s`", default: "`5m`",
                "How often the agent asks for documents when no stream tells it of a change. Every wait gets ±10 % jitter, "
                    + "so a fleet does not ask in step. A look that failed (no answer, a 5xx, a download cut) is tried "
                    + "again sooner: after a delay drawn from 0 to 1 s × 2ⁿ for the n-th failure in a row, at most this."),
            DocumentedKey(
                "probation", "duration, > 0, ≤ `1h`", default: "`60s`",
                "How long newly applied remote sources must stay healthy before they become the last-known-good set; a "
                    + "failure within it rolls back."),
            DocumentedKey(
                "max_document_bytes", "size, `1KiB` to `16MiB`", default: "`1MiB`",
                "A larger document is refused before it is parsed."),
            DocumentedKey(
                "trusted_keys", "list of absolute paths", default: "none",
                "Files with the Ed25519 public keys documents may be signed with (several: rotation). Each must be readable "
                    + "when the configuration is loaded."),
            DocumentedKey(
                "require_signature", "bool", default: "`true`",
                "Refuse documents without a valid signature by a trusted key, and those a collector serves unsigned. "
                    + "`false`: documents without an envelope are accepted (the manifest's digest vouches for them; no "
                    + "serial, so no replay protection). With `enabled: true` and `true`, `trusted_keys` must list at "
                    + "least one file."),
            DocumentedKey(
                "labels", "mapping of strings", default: "none",
                "This agent's labels (`site: berlin-3`), reported to the collector and checked against a document's audience. "
                    + "At most 64 labels. Label names: letters, digits, `.`, `_`, `-`, at most 63; values: at most 255 bytes, "
                    + "no whitespace, `,` or `=`."),
            DocumentedKey(
                "allow.source_types", "list of source types (not `generator`)", default: "none",
                "The kinds a remote source may be. Empty: no remote source is accepted."),
            DocumentedKey(
                "allow.tail_paths", "list of absolute glob patterns", default: "none",
                "Every pattern in a remote `tail` source's `paths` must lie inside one of these (`/var/log/app/*.log` "
                    + "inside `/var/log/app/**`), and the real path of every file it opens (symbolic links resolved) must "
                    + "match one: a file outside is not opened, logged and counted."),
            DocumentedKey(
                "allow.sysfs_paths", "list of absolute glob patterns", default: "none",
                "The `path` of a remote `sysfs` source must match one."),
            DocumentedKey(
                "allow.journald_units", "list of unit patterns (`*`, `?`)", default: "none",
                "A remote `journald` source must list `units`, each matching one of these (a name without `.` gets "
                    + "`.service` on both sides); a `_SYSTEMD_UNIT=` match too."),
            DocumentedKey(
                "allow.exec", "list of `{ argv: [...] }`", default: "none",
                "The command lines a remote `exec` source may run: the same number of arguments, the first an absolute "
                    + "path matched exactly, `*` for any one argument. Anything here is remote code execution on the box "
                    + "by whoever signs documents; `uplink validate` warns about shells and interpreters."),
            DocumentedKey(
                "allow.max_sources", "integer, 0 to 1024", default: "`32`", "Most remote sources, all documents together."),
            DocumentedKey(
                "allow.min_interval", "duration, > 0", default: "`1s`",
                "Smallest `interval` or `*_interval` a remote source may write (defaults of the kinds are not checked)."),
        ]
    }
}

extension UplinkFile.RemoteConfigSection {
    static func decode(_ section: ConfigMapping) -> Self {
        let decoder = section.decoder
        var remote = Self()
        if let enabled = section.bool("enabled") { remote.enabled = enabled }
        if let interval = section.duration("poll_interval", .atLeast(minimumPollInterval)) { remote.pollInterval = interval }
        if let probation = section.duration(
            "probation", ConfigConstraint(minimum: (.zero, false), maximum: maximumProbation))
        {
            remote.probation = probation
        }
        if let bytes = section.size("max_document_bytes", .between(documentBytesRange.minimum, documentBytesRange.maximum)) {
            remote.maxDocumentBytes = bytes
        }
        // Set when a listed key file was reported: an empty list is then not reported a second time.
        var keyProblems = false
        if let keys = section.list("trusted_keys") {
            for element in keys {
                guard let path = decoder.string(element.node, at: element.path) else {
                    keyProblems = true
                    continue
                }
                guard path.hasPrefix("/") else {
                    decoder.report(
                        .invalidValue, at: element.node.mark, path: element.path, "'\(path)' is not an absolute path",
                        hint: "give the key file's full path, e.g. /etc/uplink/fleet-keys/ops.pub")
                    keyProblems = true
                    continue
                }
                let key: SigningKeyFile.TrustedKey
                switch SigningKeyFile.readPublic(path: path) {
                case .success(let read): key = read
                case .failure(let failure):
                    decoder.report(
                        .unreadableFile, at: element.node.mark, path: element.path, failure.reason,
                        hint: "a public key file from `uplink config keygen` (PREFIX.pub)")
                    keyProblems = true
                    continue
                }
                if let other = remote.signingKeys.firstIndex(where: { $0.id == key.id }) {
                    decoder.report(
                        .invalidValue, at: element.node.mark, path: element.path,
                        "'\(path)' has key id '\(key.id)', as '\(remote.trustedKeys[other])' has",
                        hint: "each trusted key needs its own id (uplink config keygen --key-id)")
                    keyProblems = true
                    continue
                }
                remote.trustedKeys.append(path)
                remote.signingKeys.append(key)
            }
        }
        if let require = section.bool("require_signature") { remote.requireSignature = require }
        if let labels = section.mapping("labels", allowedKeys: nil) {
            if labels.entries.count > maximumLabels {
                decoder.report(
                    .outOfRange, at: labels.node.mark, path: labels.path,
                    "\(labels.entries.count) labels, more than \(maximumLabels) (a collector refuses more in Uplink-Labels)",
                    hint: "keep the labels that assignment rules and audiences match")
            }
            for entry in labels.entries {
                if let problem = labelNameProblem(entry.name) {
                    decoder.report(.invalidValue, at: entry.key.mark, path: labels.path(entry.name), problem)
                    continue
                }
                guard let value = decoder.string(entry.value, at: labels.path(entry.name)) else { continue }
                // Labels travel as `Uplink-Labels: name=value,name=value`: a value cannot hold the separators.
                if AgentLabels.valueProblem(value) != nil || value.contains("=") {
                    decoder.report(
                        .invalidValue, at: entry.value.mark, path: labels.path(entry.name),
                        "invalid label value '\(value)': at most 255 bytes, without whitespace, control characters, ',' or '='")
                    continue
                }
                remote.labels[entry.name] = value
            }
        }
        if let allow = section.mapping("allow", allowedKeys: Allow.keys) { remote.allow = Allow.decode(allow) }
        if remote.enabled, remote.requireSignature, remote.trustedKeys.isEmpty, !keyProblems {
            let node = section.value("trusted_keys") ?? section.value("require_signature") ?? section.node
            decoder.report(
                .missingKey, at: node.mark, path: section.path("trusted_keys"),
                "remote_config is enabled and requires signatures, but trusted_keys lists no key file",
                hint: "add the public key files documents are signed with, or set require_signature: false to accept unsigned documents")
        }
        return remote
    }

    /// Why `name` cannot name a label, or nil.
    static func labelNameProblem(_ name: String) -> String? {
        if name.isEmpty || name.utf8.count > AgentLabels.maximumNameBytes {
            return "a label name must have 1 to \(AgentLabels.maximumNameBytes) characters"
        }
        return AgentLabels.isValidName(name) ? nil : "invalid label name '\(name)' (letters, digits, '.', '_' and '-')"
    }
}

extension UplinkFile.RemoteConfigSection.Allow {
    static func decode(_ section: ConfigMapping) -> Self {
        let decoder = section.decoder
        var allow = Self()
        if let types = section.list("source_types") {
            let names = SourceKind.allCases.map(\.typeName).filter { $0 != GeneratorConfig.typeName }
            for element in types {
                guard let name = decoder.string(element.node, at: element.path) else { continue }
                if name == GeneratorConfig.typeName {
                    decoder.report(
                        .notAllowed, at: element.node.mark, path: element.path,
                        "the generator kind cannot be allowed remotely (it exists for load tests)")
                } else if let kind = SourceKind(typeName: name) {
                    if !allow.sourceTypes.contains(kind) { allow.sourceTypes.append(kind) }
                } else {
                    decoder.report(
                        .invalidValue, at: element.node.mark, path: element.path, "unknown source type '\(name)'",
                        hint: ConfigSuggestions.hint(for: name, among: names, listing: "known types"))
                }
            }
        }
        allow.tailPaths = absolutePatterns("tail_paths", section)
        allow.sysfsPaths = absolutePatterns("sysfs_paths", section)
        allow.journaldUnits =
            section.strings("journald_units") { unit in
                JournaldMatch.isUnitPattern(unit)
                    ? .success(unit)
                    : .failure(ConfigValueError(
                        message: "invalid unit pattern '\(unit)'", hint: "a unit name, '*' and '?' allowed, e.g. 'app-*.service'"))
            } ?? []
        if let patterns = section.list("exec") {
            for element in patterns {
                guard let item = decoder.mapping(element.node, at: element.path, allowedKeys: ["argv"]),
                    let argvNode = item.require("argv", hint: "e.g. 'argv: [/usr/local/lib/uplink/probes/read, --unit, \"*\"]'"),
                    let argv = decoder.list(argvNode, at: item.path("argv"))
                else { continue }
                let arguments = argv.compactMap { decoder.string($0.node, at: $0.path) }
                guard arguments.count == argv.count else { continue }
                guard let program = arguments.first else {
                    decoder.report(.invalidValue, at: argvNode.mark, path: item.path("argv"), "argv must not be empty")
                    continue
                }
                guard program.hasPrefix("/"), !program.contains("*") else {
                    decoder.report(
                        .invalidValue, at: argv[0].node.mark, path: argv[0].path,
                        "argv[0] '\(program)' must be an absolute path, written out exactly",
                        hint: "remote commands are not looked up in PATH; e.g. /usr/local/lib/uplink/probes/read")
                    continue
                }
                allow.exec.append(arguments)
            }
        }
        if let count = section.int("max_sources", .between(0, UplinkFile.RemoteConfigSection.maximumSources)) {
            allow.maxSources = count
        }
        if let interval = section.duration("min_interval", .greaterThan(.zero)) { allow.minInterval = interval }
        return allow
    }

    /// `key` as a list of absolute glob patterns without `.` or `..` components.
    private static func absolutePatterns(_ key: String, _ section: ConfigMapping) -> [String] {
        section.strings(key) { pattern in
            if let problem = RemoteDocument.pathProblem(pattern) {
                return .failure(ConfigValueError(message: problem, hint: "an absolute glob pattern such as /var/log/app/**"))
            }
            return .success(pattern)
        } ?? []
    }
}
