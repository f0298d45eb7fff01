/// Why a body line (docs/protocol.md) could not be read.
///
/// `code` is stable and meant for counting and filtering; `message` is for people and names the key involved;
/// `offset` is the byte position in the line at which the problem was found.
public struct WireDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Stable machine-readable reason, one of the `WireDecodingError.Code` constants, e.g. `"missing_key"`.
    public var code: String
    /// Human-readable explanation, naming the key involved where there is one.
    public var message: String
    /// Byte offset in the line at which the problem was detected (0-based).
    public var offset: Int

    /// Creates an error; `code` should be one of the `Code` constants.
    public init(code: String, message: String, offset: Int) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// `code at byte offset: message`.
    public var description: String { "\(code) at byte \(offset): \(message)" }

    /// The stable values of `code`.
    public enum Code {
        /// Not well-formed JSON: a syntax error, a bad escape or lone surrogate, a raw control character in a
        /// string, trailing bytes after the object, an empty line.
        public static let invalidJSON = "invalid_json"
        /// A string contains bytes that are not well-formed UTF-8.
        public static let invalidUTF8 = "invalid_utf8"
        /// The line is valid JSON but not an object.
        public static let notAnObject = "not_an_object"
        /// Arrays and objects (in unknown keys) are nested deeper than `WireLineParser.maximumDepth`.
        public static let tooDeep = "too_deep"
        /// A required key is absent.
        public static let missingKey = "missing_key"
        /// A known key has a value of the wrong JSON type (e.g. `seq` a string or a fraction).
        public static let wrongType = "wrong_type"
        /// A value has the right type but is out of range (e.g. `seq` 0, an integer beyond 64 bits).
        public static let invalidValue = "invalid_value"
        /// A known key appears twice in the line.
        public static let duplicateKey = "duplicate_key"
        /// Keys that cannot appear together, e.g. `metric` and `log`, or `seq` and `heartbeat`.
        public static let conflictingKeys = "conflicting_keys"
    }
}
