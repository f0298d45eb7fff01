import UplinkCore

/// What loading a configuration produced: the typed value when the file has no issues, and every issue otherwise.
///
/// `value` is nil whenever `issues` is not empty: a configuration with any problem is not used, so that nothing
/// runs on a half-understood file.
public struct ConfigResult<Value: Sendable>: Sendable {
    /// The configuration, present exactly when `issues` is empty.
    public var value: Value?
    /// Every issue, in document order.
    public var issues: [ConfigIssue]

    public init(value: Value?, issues: [ConfigIssue]) {
        self.issues = issues
        self.value = issues.isEmpty ? value : nil
    }

    /// The configuration, or the issues as a `ConfigIssues` error.
    public func get() throws(ConfigIssues) -> Value {
        guard let value, issues.isEmpty else { throw ConfigIssues(issues) }
        return value
    }
}

/// All the issues of a configuration, as one error whose description lists them one per line.
public struct ConfigIssues: Error, Sendable, Equatable, CustomStringConvertible {
    public var issues: [ConfigIssue]

    public init(_ issues: [ConfigIssue]) {
        self.issues = issues
    }

    /// One issue per line, in document order.
    public var description: String {
        issues.map(\.description).joined(separator: "\n")
    }
}
