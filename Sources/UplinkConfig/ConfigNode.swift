/// A position in a configuration file: 1-based line and column (in characters).
public struct ConfigMark: Sendable, Hashable, CustomStringConvertible {
    /// Path of the file, as given to the parser.
    public var file: String
    /// 1-based line.
    public var line: Int
    /// 1-based column, counted in Unicode characters (code points).
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `FILE:LINE:COLUMN`.
    public var description: String { "\(file):\(line):\(column)" }
}

/// Where a value sits in the document: mapping keys and list positions from the root, e.g. `sources[2].interval`.
public struct ConfigPath: Sendable, Hashable, CustomStringConvertible {
    /// One step from a node to a child.
    public enum Component: Sendable, Hashable {
        /// The value of this key of a mapping.
        case key(String)
        /// The item at this 0-based position of a list.
        case index(Int)
    }

    /// The steps from the root.
    public var components: [Component]

    public init(_ components: [Component] = []) {
        self.components = components
    }

    /// The document's root (an empty path, rendered as `""`).
    public static let root = ConfigPath()

    /// This path followed by `key`.
    public func appending(_ key: String) -> ConfigPath {
        ConfigPath(components + [.key(key)])
    }

    /// This path followed by list position `index`.
    public func appending(index: Int) -> ConfigPath {
        ConfigPath(components + [.index(index)])
    }

    /// Keys joined by `.`, positions as `[index]`: `sources[2].interval`, `uplink.backoff.max`; `""` for the root.
    public var description: String {
        var text = ""
        for component in components {
            switch component {
            case .key(let key):
                if !text.isEmpty { text += "." }
                text += key
            case .index(let index):
                text += "[\(index)]"
            }
        }
        return text
    }
}

/// A scalar value as it appears in the document.
public struct ConfigScalar: Sendable, Equatable {
    /// How the scalar was written.
    public enum Style: Sendable, Equatable {
        /// Unquoted: `10s`, `true`, `~`.
        case plain
        /// `'…'`.
        case singleQuoted
        /// `"…"`.
        case doubleQuoted
        /// A `|` block.
        case literal
        /// A `>` block.
        case folded
    }

    /// The value after YAML unescaping and `${VAR}` substitution. This is what decoders read.
    public var value: String
    /// The value after YAML unescaping, before `${VAR}` substitution (what the file says).
    public var raw: String
    /// How the scalar was written.
    public var style: Style
    /// Whether `${VAR}` substitution failed (an unset variable, a malformed reference). The problem has been
    /// reported by the parser; decoders read such a value as unusable without reporting it again.
    public var substitutionFailed: Bool

    public init(value: String, raw: String? = nil, style: Style = .plain, substitutionFailed: Bool = false) {
        self.value = value
        self.raw = raw ?? value
        self.style = style
        self.substitutionFailed = substitutionFailed
    }

    /// Whether the scalar was quoted (`'…'` or `"…"`). Quoted scalars are never null.
    public var isQuoted: Bool { style == .singleQuoted || style == .doubleQuoted }

    /// Whether the scalar is YAML's null: unquoted and empty, `~`, `null`, `Null` or `NULL` (after substitution,
    /// so `${UNSET_OK:-}` yields null and the setting keeps its default).
    public var isNull: Bool {
        !substitutionFailed && style == .plain && (value.isEmpty || value == "~" || value == "null" || value == "Null" || value == "NULL")
    }
}

/// One key and its value in a mapping.
public struct ConfigEntry: Sendable, Equatable {
    /// The key, always a scalar node (other keys are rejected by the parser).
    public var key: ConfigNode
    /// The value.
    public var value: ConfigNode

    public init(key: ConfigNode, value: ConfigNode) {
        self.key = key
        self.value = value
    }

    /// The key's text.
    public var name: String {
        if case .scalar(let scalar) = key.content { return scalar.value }
        return ""
    }
}

/// A node of a parsed configuration document: a scalar, a mapping or a sequence, with the position where it starts.
public struct ConfigNode: Sendable, Equatable {
    /// What the node holds.
    public enum Content: Sendable, Equatable {
        /// A single value.
        case scalar(ConfigScalar)
        /// Keys and values, in document order.
        case mapping([ConfigEntry])
        /// Items, in document order.
        case sequence([ConfigNode])
    }

    /// What the node holds.
    public var content: Content
    /// Where the node starts: the first character of a scalar (its opening quote if quoted), the first key of a
    /// block mapping, the first `-` of a block sequence, the `{` or `[` of a flow collection, or the anchor
    /// (`&name`) written before any of them.
    public var mark: ConfigMark

    public init(_ content: Content, mark: ConfigMark) {
        self.content = content
        self.mark = mark
    }

    /// The scalar, if the node is one.
    public var scalar: ConfigScalar? {
        if case .scalar(let scalar) = content { return scalar }
        return nil
    }

    /// The entries, if the node is a mapping.
    public var entries: [ConfigEntry]? {
        if case .mapping(let entries) = content { return entries }
        return nil
    }

    /// The items, if the node is a sequence.
    public var items: [ConfigNode]? {
        if case .sequence(let items) = content { return items }
        return nil
    }

    /// Whether the node is a null scalar (see `ConfigScalar.isNull`).
    public var isNull: Bool { scalar?.isNull ?? false }

    /// The value of the first entry with this key, if the node is a mapping that has one.
    public subscript(key: String) -> ConfigNode? {
        entries?.first { $0.name == key }?.value
    }

    /// Whether `other` holds the same values, keys and structure, wherever either stands in its file: scalars
    /// compare by their value after substitution (so an edit elsewhere in the file, which moves the marks, or a
    /// changed quoting style is not a change).
    public func hasSameContent(as other: ConfigNode) -> Bool {
        switch (content, other.content) {
        case (.scalar(let lhs), .scalar(let rhs)):
            return lhs.value == rhs.value && lhs.isNull == rhs.isNull && lhs.substitutionFailed == rhs.substitutionFailed
        case (.mapping(let lhs), .mapping(let rhs)):
            return lhs.count == rhs.count
                && zip(lhs, rhs).allSatisfy { $0.name == $1.name && $0.value.hasSameContent(as: $1.value) }
        case (.sequence(let lhs), .sequence(let rhs)):
            return lhs.count == rhs.count && zip(lhs, rhs).allSatisfy { $0.hasSameContent(as: $1) }
        default:
            return false
        }
    }

    /// How the node is described in messages: `a mapping`, `a list`, `null`, or the quoted value.
    public var summary: String {
        switch content {
        case .mapping: return "a mapping"
        case .sequence: return "a list"
        case .scalar(let scalar):
            if scalar.isNull { return "null" }
            return "'\(scalar.value)'"
        }
    }
}
