/// The range a numeric setting must fall in. Violations are reported as `out_of_range` issues quoting the value as
/// written and the bound in the setting's own syntax (`'0s' is too small: it must be greater than 0s`).
public struct ConfigConstraint<Value: Comparable & Sendable>: Sendable {
    /// The lower bound, if any, and whether the value may equal it.
    public var minimum: (value: Value, inclusive: Bool)?
    /// The upper bound (inclusive), if any.
    public var maximum: Value?

    public init(minimum: (value: Value, inclusive: Bool)? = nil, maximum: Value? = nil) {
        self.minimum = minimum
        self.maximum = maximum
    }

    /// No bounds.
    public static var any: ConfigConstraint { ConfigConstraint() }

    /// At least `bound`.
    public static func atLeast(_ bound: Value) -> ConfigConstraint { ConfigConstraint(minimum: (bound, true)) }

    /// Strictly greater than `bound`.
    public static func greaterThan(_ bound: Value) -> ConfigConstraint { ConfigConstraint(minimum: (bound, false)) }

    /// At most `bound`.
    public static func atMost(_ bound: Value) -> ConfigConstraint { ConfigConstraint(maximum: bound) }

    /// From `lower` to `upper`, both included.
    public static func between(_ lower: Value, _ upper: Value) -> ConfigConstraint {
        ConfigConstraint(minimum: (lower, true), maximum: upper)
    }

    /// Why `value` (written as `text`) is out of range, or nil when it is within it.
    public func violation(by value: Value, written text: String, format: (Value) -> String) -> String? {
        let tooSmall = minimum.map { $0.inclusive ? value < $0.value : value <= $0.value } ?? false
        let tooLarge = maximum.map { value > $0 } ?? false
        guard tooSmall || tooLarge else { return nil }
        if let minimum, let maximum, minimum.inclusive {
            return "'\(text)' is out of range: it must be between \(format(minimum.value)) and \(format(maximum))"
        }
        if tooSmall, let minimum {
            return minimum.inclusive
                ? "'\(text)' is too small: the minimum is \(format(minimum.value))"
                : "'\(text)' is too small: it must be greater than \(format(minimum.value))"
        }
        return "'\(text)' is too large: the maximum is \(maximum.map(format) ?? "")"
    }
}
