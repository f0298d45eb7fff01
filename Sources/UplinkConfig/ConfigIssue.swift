/// One problem found in a configuration file, with where it is and what to do about it.
///
/// Configuration problems are collected, not thrown one at a time: loading a file returns every issue it found,
/// in document order, so an operator can fix them all in one pass.
///
/// ## Format
///
/// `description` renders an issue on one line as
///
///     FILE:LINE:COLUMN: KEY.PATH: MESSAGE (hint: HINT)
///
/// for example
///
///     /etc/uplink.yaml:12:15: sources[1].interval: invalid duration '10': a unit is required (hint: write '10s' for seconds, '10ms' for milliseconds; units: ns, us, ms, s, m, h)
///
/// - `LINE` and `COLUMN` are 1-based; columns count Unicode characters (code points), a tab counting as one.
///   When the issue is about the file as a whole (it cannot be read) the position is omitted: `FILE: MESSAGE`.
/// - `KEY.PATH` names the setting: mapping keys joined by `.`, list positions as `[index]` counted from 0
///   (`sources[2].interval`, `uplink.backoff.max`). It is omitted, with its `: `, when the issue concerns no
///   particular key (a syntax error, an empty document).
/// - ` (hint: …)` is present only when there is a hint.
public struct ConfigIssue: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable category of issue. Messages may be reworded; codes do not change.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The file is not valid YAML (libyaml's own message and position).
        public static let syntax = Code(rawValue: "syntax")
        /// The file could not be read, or holds something other than one YAML document.
        public static let unreadable = Code(rawValue: "unreadable")
        /// A YAML feature the configuration does not accept (a non-scalar key, a runaway alias expansion, …).
        public static let unsupported = Code(rawValue: "unsupported")
        /// A key appears twice in the same mapping.
        public static let duplicateKey = Code(rawValue: "duplicate_key")
        /// A key that the section does not know (usually a typo; the hint suggests the closest known key).
        public static let unknownKey = Code(rawValue: "unknown_key")
        /// A required key is absent or has no value.
        public static let missingKey = Code(rawValue: "missing_key")
        /// A value of the wrong kind: a list where a mapping belongs, text where a number belongs, …
        public static let wrongType = Code(rawValue: "wrong_type")
        /// A value of the right kind that cannot be used: a malformed duration, size or URL, an unknown enum value.
        public static let invalidValue = Code(rawValue: "invalid_value")
        /// A well-formed value outside its allowed range, or inconsistent with another value.
        public static let outOfRange = Code(rawValue: "out_of_range")
        /// `${VAR}` names an environment variable that is not set and has no default.
        public static let unsetVariable = Code(rawValue: "unset_variable")
        /// A file named by the configuration (e.g. `token_file`) cannot be read or is empty.
        public static let unreadableFile = Code(rawValue: "unreadable_file")
        /// Two entries of a list that must have unique names share one.
        public static let duplicateName = Code(rawValue: "duplicate_name")
        /// Well-formed, but not allowed where it stands: a remote document setting what only the local file may set,
        /// or a remote source outside the local file's `remote_config.allow`.
        public static let notAllowed = Code(rawValue: "not_allowed")
    }

    /// Path of the configuration file, as given to the loader.
    public var file: String
    /// 1-based line of the offending key or value; 0 when the issue concerns the whole file.
    public var line: Int
    /// 1-based column (in characters) of the offending key or value; 0 when the issue concerns the whole file.
    public var column: Int
    /// Path of the setting, e.g. `sources[2].interval`; empty when the issue concerns no particular key.
    public var keyPath: String
    /// Stable category of the issue.
    public var code: Code
    /// What is wrong, in one sentence without a trailing period.
    public var message: String
    /// How to fix it, when there is something more useful to say than the message.
    public var hint: String?

    public init(
        file: String, line: Int, column: Int, keyPath: String, code: Code, message: String, hint: String? = nil
    ) {
        self.file = file
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.code = code
        self.message = message
        self.hint = hint
    }

    /// `FILE:LINE:COLUMN: KEY.PATH: MESSAGE (hint: HINT)`; see the type's documentation for the omitted parts.
    /// Control characters in any part (a quoted value with a newline, an escape sequence, a NUL) are escaped with
    /// `escapingControlCharacters(_:)`, so an issue is always exactly one line and sends a terminal nothing but
    /// text.
    public var description: String {
        var text = Self.escapingControlCharacters(file)
        if line > 0 { text += ":\(line):\(column)" }
        text += ": "
        if !keyPath.isEmpty { text += Self.escapingControlCharacters(keyPath) + ": " }
        text += Self.escapingControlCharacters(message)
        if let hint { text += " (hint: \(Self.escapingControlCharacters(hint)))" }
        return text
    }

    /// `text` with its control characters written as escapes: `\n`, `\r`, `\t`, and `\uXXXX` (lowercase hex)
    /// for the other C0 controls, DEL, the C1 controls (U+0080 to U+009F) and the line and paragraph separators
    /// U+2028 and U+2029. Other characters, backslashes included, are kept as they are.
    public static func escapingControlCharacters(_ text: String) -> String {
        func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
            let value = scalar.value
            return value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029
        }
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var escaped = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                escaped.append(scalar)
                continue
            }
            switch scalar {
            case "\n": escaped.append(contentsOf: #"\n"#.unicodeScalars)
            case "\r": escaped.append(contentsOf: #"\r"#.unicodeScalars)
            case "\t": escaped.append(contentsOf: #"\t"#.unicodeScalars)
            default:
                let hex = String(scalar.value, radix: 16)
                escaped.append(contentsOf: (#"\u"# + String(repeating: "0", count: 4 - hex.count) + hex).unicodeScalars)
            }
        }
        return String(escaped)
    }
}

extension Sequence where Element == ConfigIssue {
    /// The issues in document order: by file, then line, then column; issues at the same position keep the
    /// order in which they were found.
    public func sortedInDocumentOrder() -> [ConfigIssue] {
        enumerated().sorted { lhs, rhs in
            let (l, r) = (lhs.element, rhs.element)
            if l.file != r.file { return l.file < r.file }
            if l.line != r.line { return l.line < r.line }
            if l.column != r.column { return l.column < r.column }
            return lhs.offset < rhs.offset
        }.map(\.element)
    }
}
