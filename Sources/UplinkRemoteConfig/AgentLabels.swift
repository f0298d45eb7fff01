import UplinkCore

/// The labels an agent presents (its `remote_config.labels`), as they travel in `Uplink-Labels: name=value,…`: the
/// one owner of their limits and of the header's form, for the agent that writes it and the collector that reads it.
public enum AgentLabels {
    /// Most labels an agent may have, and a header may carry.
    public static let maximumCount = 64
    /// Longest label name, in bytes.
    public static let maximumNameBytes = 63
    /// Longest label value, in bytes.
    public static let maximumValueBytes = 255

    /// Whether `name` can name a label: 1 to `maximumNameBytes` of `A-Z a-z 0-9 . _ -`.
    public static func isValidName(_ name: some StringProtocol) -> Bool {
        PortableName.isValid(name, maximumBytes: maximumNameBytes)
    }

    /// Why a text cannot be a label's value.
    public enum ValueProblem: Sendable, Equatable {
        /// Longer than `maximumValueBytes`.
        case tooLong
        /// Holds whitespace or control characters.
        case whitespaceOrControl
        /// Holds a `,`, which separates the header's labels.
        case comma
    }

    /// Why `value` cannot be a label's value, or nil: at most `maximumValueBytes`, without whitespace, control
    /// characters or `,`.
    public static func valueProblem(_ value: some StringProtocol) -> ValueProblem? {
        if value.utf8.count > maximumValueBytes { return .tooLong }
        if value.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control }) {
            return .whitespaceOrControl
        }
        return value.utf8.contains(UInt8(ascii: ",")) ? .comma : nil
    }

    /// The header's value: `name=value` pairs sorted by name, separated by commas.
    public static func header(_ labels: [String: String]) -> String {
        labels.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }
}
