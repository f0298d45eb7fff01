import UplinkCore

/// A parsed configuration file: its node tree and the issues found while parsing.
///
/// Parsing never throws: YAML syntax errors, duplicate keys, undefined aliases and `${VAR}` problems all become
/// `ConfigIssue`s. After a syntax error `root` is nil (libyaml cannot go on), but issues found before it are kept.
///
/// What the parser accepts beyond plain YAML mappings, lists and scalars:
/// - **Anchors and aliases** (`&name`, `*name`) are resolved: an alias stands for a copy of the anchored node, and
///   issues inside it point at the anchored original. Expansion is capped at `maximumNodes` nodes in total.
/// - **Merge keys** (`<<: *defaults`, or `<<: [*a, *b]`) copy the keys of the merged mappings that the mapping
///   does not set itself.
/// - **Tags** (`!!str`, `!custom`) are ignored; values are typed by the decoder that reads them.
/// - Only **one document** per file; a second `---` document is an issue.
/// - Keys must be scalars; a mapping or list used as a key is an issue.
/// - `${VAR}` substitution applies to every scalar value (not to keys); see `ConfigEnvironment`.
///
/// A document from elsewhere (a remote configuration document) is parsed with `ConfigParseOptions.untrusted`: no
/// substitution (any `${`, comments included, is an issue), and anchors, aliases and merge keys are issues.
public struct ConfigDocument: Sendable {
    /// Path of the file, as given (used in every mark and issue).
    public var file: String
    /// The document's root node; nil for an empty document (only comments or nothing) or after a syntax error.
    public var root: ConfigNode?
    /// Every issue found while reading and parsing, in document order.
    public var issues: [ConfigIssue]

    public init(file: String, root: ConfigNode?, issues: [ConfigIssue]) {
        self.file = file
        self.root = root
        self.issues = issues
    }

    /// Largest number of nodes a document may expand to (aliases count with the size of what they copy).
    public static let maximumNodes = 100_000

    /// Largest configuration file read, in bytes (16 MiB).
    public static let maximumFileBytes = 16 << 20

    /// Parses YAML text.
    /// - Parameters:
    ///   - text: The document.
    ///   - file: The name to put in marks and issues.
    ///   - environment: Where `${VAR}` references get their values.
    public static func parse(_ text: String, file: String, environment: ConfigEnvironment = .process) -> ConfigDocument {
        parse(bytes: Array(text.utf8), file: file, environment: environment)
    }

    /// Parses YAML bytes (UTF-8, or UTF-16 with a byte-order mark).
    public static func parse(bytes: [UInt8], file: String, environment: ConfigEnvironment = .process) -> ConfigDocument {
        parse(bytes: bytes, file: file, options: ConfigParseOptions(environment: environment))
    }

    /// Parses YAML bytes with `options` (e.g. `ConfigParseOptions.untrusted` for a document from elsewhere).
    public static func parse(bytes: [UInt8], file: String, options: ConfigParseOptions) -> ConfigDocument {
        var builder = TreeBuilder(file: file, source: bytes, options: options)
        builder.run()
        return ConfigDocument(file: file, root: builder.root, issues: builder.issues.sortedInDocumentOrder())
    }

    /// Reads and parses the file at `path`. An unreadable file yields one issue with no position.
    public static func load(path: String, environment: ConfigEnvironment = .process) -> ConfigDocument {
        switch ConfigFiles.read(path: path, limit: maximumFileBytes) {
        case .success(let bytes):
            return parse(bytes: bytes, file: path, environment: environment)
        case .failure(let failure):
            let issue = ConfigIssue(
                file: path, line: 0, column: 0, keyPath: "", code: .unreadable,
                message: "cannot read the configuration file: \(failure)")
            return ConfigDocument(file: path, root: nil, issues: [issue])
        }
    }
}

/// How `ConfigDocument.parse` treats what the YAML features and `${VAR}` references of a document ask for.
public struct ConfigParseOptions: Sendable {
    /// Where `${VAR}` references get their values; nil: none are expanded, and any scalar (key or value) containing
    /// `${` is a `not_allowed` issue (the scalar then reads as unusable, without a second issue).
    public var environment: ConfigEnvironment?
    /// Whether anchors (`&name`), aliases (`*name`) and merge keys (`<<`) are accepted. When false, each one is a
    /// `not_allowed` issue where it is written, and nothing is copied (no expansion, however small).
    public var allowsAliases: Bool

    public init(environment: ConfigEnvironment? = .process, allowsAliases: Bool = true) {
        self.environment = environment
        self.allowsAliases = allowsAliases
    }

    /// For a document from elsewhere (a remote configuration document): no environment expansion, no anchors,
    /// aliases or merge keys.
    public static let untrusted = ConfigParseOptions(environment: nil, allowsAliases: false)
}
