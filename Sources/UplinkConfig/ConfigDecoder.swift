import UplinkCore
import UplinkFiles

/// Reads typed values from a parsed document and collects every issue instead of stopping at the first.
///
/// Readers return nil when a value is absent or unusable; when it is unusable they also record an issue with the
/// value's position and key path. A caller applies its default for nil and keeps going, so one pass over the
/// document finds every problem. `issues` then holds them all (including the parser's), in document order.
///
/// ```swift
/// let decoder = ConfigDecoder(document: ConfigDocument.load(path: path))
/// if let root = decoder.rootMapping(allowedKeys: ["interval"]) {
///     let interval = root.duration("interval", .greaterThan(.zero)) ?? .seconds(10)
/// }
/// if decoder.issues.isEmpty { … }
/// ```
///
/// A decoder is used by one task at a time, like the document it reads.
public final class ConfigDecoder {
    /// Path of the configuration file (in every issue).
    public let file: String
    /// Directory against which relative paths of files the configuration reads (`token_file`) are resolved: the
    /// configuration file's directory.
    public let baseDirectory: String
    /// The parsed document.
    public let root: ConfigNode?
    private var collected: [ConfigIssue]

    /// A decoder over a parsed document, starting with the parser's issues.
    public init(document: ConfigDocument) {
        file = document.file
        baseDirectory = AtomicFile.parentDirectory(of: document.file)
        root = document.root
        collected = document.issues
    }

    /// Every issue found so far, in document order.
    public var issues: [ConfigIssue] { collected.sortedInDocumentOrder() }

    /// Whether any issue was found so far.
    public var hasIssues: Bool { !collected.isEmpty }

    /// Records an issue at `mark`.
    public func report(
        _ code: ConfigIssue.Code, at mark: ConfigMark, path: ConfigPath, _ message: String, hint: String? = nil
    ) {
        collected.append(ConfigIssue(
            file: file, line: mark.line, column: mark.column, keyPath: path.description, code: code, message: message,
            hint: hint))
    }

    /// Records a value parsing error at `mark`.
    public func report(_ error: ConfigValueError, code: ConfigIssue.Code = .invalidValue, at mark: ConfigMark, path: ConfigPath) {
        report(code, at: mark, path: path, error.message, hint: error.hint)
    }

    /// The root of the document as a mapping. An empty document yields an empty mapping (positioned at 1:1); any
    /// other root is reported.
    public func rootMapping(allowedKeys: [String]?) -> ConfigMapping? {
        guard let root else {
            // An empty document, or one that failed to parse (already reported).
            if hasIssues { return nil }
            return ConfigMapping(
                decoder: self, node: ConfigNode(.mapping([]), mark: ConfigMark(file: file, line: 1, column: 1)),
                path: .root, allowedKeys: allowedKeys)
        }
        return mapping(root, at: .root, allowedKeys: allowedKeys)
    }

    // MARK: - Collections

    /// `node` as a mapping, checking its keys against `allowedKeys` (nil: no check). Null yields an empty mapping.
    public func mapping(_ node: ConfigNode, at path: ConfigPath, allowedKeys: [String]?) -> ConfigMapping? {
        if node.scalar?.substitutionFailed == true { return nil }
        switch node.content {
        case .mapping:
            return ConfigMapping(decoder: self, node: node, path: path, allowedKeys: allowedKeys)
        case .scalar(let scalar) where scalar.isNull:
            return ConfigMapping(
                decoder: self, node: ConfigNode(.mapping([]), mark: node.mark), path: path, allowedKeys: allowedKeys)
        default:
            report(.wrongType, at: node.mark, path: path, "expected a mapping of keys to values, got \(node.summary)")
            return nil
        }
    }

    /// `node`'s items with their paths. Null yields an empty list.
    public func list(_ node: ConfigNode, at path: ConfigPath) -> [ConfigElement]? {
        if node.scalar?.substitutionFailed == true { return nil }
        switch node.content {
        case .sequence(let items):
            return items.enumerated().map { ConfigElement(node: $1, path: path.appending(index: $0)) }
        case .scalar(let scalar) where scalar.isNull:
            return []
        default:
            report(.wrongType, at: node.mark, path: path, "expected a list, got \(node.summary)")
            return nil
        }
    }

    // MARK: - Scalars

    /// The scalar at `node`, or nil with an issue saying what was `expected` instead. A scalar whose `${VAR}`
    /// substitution failed reads as nil without a second issue.
    public func scalar(_ node: ConfigNode, at path: ConfigPath, expected: String) -> ConfigScalar? {
        if node.scalar?.substitutionFailed == true { return nil }
        guard let scalar = node.scalar, !scalar.isNull else {
            report(.wrongType, at: node.mark, path: path, "expected \(expected), got \(node.summary)")
            return nil
        }
        return scalar
    }

    /// Any scalar, as text (`123` and `true` are read as the text they are).
    /// - Parameter allowEmpty: Whether a quoted empty string (`""`) is accepted.
    public func string(_ node: ConfigNode, at path: ConfigPath, allowEmpty: Bool = false) -> String? {
        guard let scalar = scalar(node, at: path, expected: "a string") else { return nil }
        if scalar.value.isEmpty && !allowEmpty {
            report(.invalidValue, at: node.mark, path: path, "the value must not be empty")
            return nil
        }
        return scalar.value
    }

    /// `true` or `false` (also `True`, `TRUE`, `False`, `FALSE`). YAML 1.1's `yes`/`no`/`on`/`off` are rejected.
    public func bool(_ node: ConfigNode, at path: ConfigPath) -> Bool? {
        guard let scalar = scalar(node, at: path, expected: "true or false") else { return nil }
        switch scalar.value {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default:
            let legacy = ["yes", "no", "on", "off", "y", "n"].contains(scalar.value.lowercased())
            report(
                .wrongType, at: node.mark, path: path, "expected true or false, got '\(scalar.value)'",
                hint: legacy ? "write true or false; YAML 1.1 spellings such as yes, no, on and off are not accepted" : nil)
            return nil
        }
    }

    /// A decimal integer (`_` may separate digits: `1_000`), within `constraint`.
    public func int(_ node: ConfigNode, at path: ConfigPath, _ constraint: ConfigConstraint<Int> = .any) -> Int? {
        guard let scalar = scalar(node, at: path, expected: "an integer") else { return nil }
        let text = scalar.value
        let digits = text.filter { $0 != "_" }
        let body = digits.first == "-" || digits.first == "+" ? digits.dropFirst() : Substring(digits)
        guard !body.isEmpty, body.allSatisfy({ $0.isASCII && $0.isNumber }), text.last != "_", text.first != "_" else {
            report(.wrongType, at: node.mark, path: path, "expected an integer, got '\(text)'")
            return nil
        }
        guard let value = Int(digits) else {
            report(.outOfRange, at: node.mark, path: path, "'\(text)' is too large for an integer")
            return nil
        }
        return check(
            value, text: text, constraint, ceiling: ConfigLimits.maximumInteger, hint: ConfigLimits.integerHint,
            format: { "\($0)" }, at: node.mark, path: path)
    }

    /// A finite decimal number (`1000`, `0.5`, `1e3`), within `constraint`.
    public func double(_ node: ConfigNode, at path: ConfigPath, _ constraint: ConfigConstraint<Double> = .any) -> Double? {
        guard let scalar = scalar(node, at: path, expected: "a number") else { return nil }
        let text = scalar.value
        let cleaned = text.filter { $0 != "_" }
        guard cleaned.allSatisfy({ $0.isASCII && ($0.isNumber || "+-.eE".contains($0)) }), let value = Double(cleaned),
            value.isFinite
        else {
            report(.wrongType, at: node.mark, path: path, "expected a number, got '\(text)'")
            return nil
        }
        return check(value, text: text, constraint, format: { formatNumber($0) }, at: node.mark, path: path)
    }

    /// A duration such as `250ms` or `10s` (see `ConfigValueParsing.duration(_:)`), within `constraint`.
    public func duration(
        _ node: ConfigNode, at path: ConfigPath, _ constraint: ConfigConstraint<Duration> = .any
    ) -> Duration? {
        guard let scalar = scalar(node, at: path, expected: "a duration such as '10s'") else { return nil }
        do {
            let value = try ConfigValueParsing.duration(scalar.value)
            return check(
                value, text: scalar.value, constraint, ceiling: ConfigLimits.maximumDuration,
                hint: ConfigLimits.durationHint, format: ConfigValueParsing.format(duration:), at: node.mark, path: path)
        } catch {
            report(error, at: node.mark, path: path)
            return nil
        }
    }

    /// A size in bytes such as `64KiB` or `16MB` (see `ConfigValueParsing.size(_:)`), within `constraint`.
    public func size(_ node: ConfigNode, at path: ConfigPath, _ constraint: ConfigConstraint<Int> = .any) -> Int? {
        guard let scalar = scalar(node, at: path, expected: "a size such as '64KiB'") else { return nil }
        do {
            let value = try ConfigValueParsing.size(scalar.value)
            return check(
                value, text: scalar.value, constraint, ceiling: ConfigLimits.sizeCeiling, hint: ConfigLimits.sizeHint,
                format: ConfigValueParsing.format(size:), at: node.mark, path: path)
        } catch {
            report(error, at: node.mark, path: path)
            return nil
        }
    }

    /// An `http://` or `https://` URL with a host (see `ConfigURL.validate(_:)`), or one of `specialValues` as is.
    public func url(_ node: ConfigNode, at path: ConfigPath, specialValues: [String] = []) -> String? {
        guard let scalar = scalar(node, at: path, expected: "a URL such as 'http://127.0.0.1:4318'") else { return nil }
        if specialValues.contains(scalar.value) { return scalar.value }
        if let error = ConfigURL.validate(scalar.value, alternatives: specialValues) {
            report(error, at: node.mark, path: path)
            return nil
        }
        return scalar.value
    }

    /// A `host:port` address (`127.0.0.1:4318`, `[::1]:4318`, `0.0.0.0:0`); port 0 means any free port.
    public func hostPort(_ node: ConfigNode, at path: ConfigPath) -> ConfigHostPort? {
        guard let scalar = scalar(node, at: path, expected: "an address such as '127.0.0.1:4318'") else { return nil }
        switch ConfigURL.hostPort(scalar.value) {
        case .success(let address): return address
        case .failure(let error):
            report(error, at: node.mark, path: path)
            return nil
        }
    }

    /// One of `allowed`, exactly as written; anything else is reported with the closest allowed value.
    public func choice(_ node: ConfigNode, at path: ConfigPath, allowed: [String]) -> String? {
        guard let scalar = scalar(node, at: path, expected: "one of " + allowed.joined(separator: ", ")) else {
            return nil
        }
        guard allowed.contains(scalar.value) else {
            report(
                .invalidValue, at: node.mark, path: path, "invalid value '\(scalar.value)'",
                hint: ConfigSuggestions.hint(for: scalar.value, among: allowed, listing: "allowed values"))
            return nil
        }
        return scalar.value
    }

    /// The case of `E` whose raw value is written.
    public func enumeration<E: CaseIterable & RawRepresentable>(
        _ node: ConfigNode, at path: ConfigPath, as type: E.Type = E.self
    ) -> E? where E.RawValue == String {
        choice(node, at: path, allowed: E.allCases.map(\.rawValue)).flatMap(E.init(rawValue:))
    }

    private func check<Value>(
        _ value: Value, text: String, _ constraint: ConfigConstraint<Value>, format: (Value) -> String,
        at mark: ConfigMark, path: ConfigPath
    ) -> Value? {
        guard let problem = constraint.violation(by: value, written: text, format: format) else { return value }
        report(.outOfRange, at: mark, path: path, problem)
        return nil
    }

    /// `check`, then the value against `ceiling` (`ConfigLimits`), with `hint` explaining the ceiling. A key's own
    /// bound, when tighter, is what is reported: its maximum is below the ceiling.
    private func check<Value>(
        _ value: Value, text: String, _ constraint: ConfigConstraint<Value>, ceiling: Value, hint: String,
        format: (Value) -> String, at mark: ConfigMark, path: ConfigPath
    ) -> Value? {
        if let problem = constraint.violation(by: value, written: text, format: format) {
            report(.outOfRange, at: mark, path: path, problem)
            return nil
        }
        guard let problem = ConfigConstraint.atMost(ceiling).violation(by: value, written: text, format: format) else {
            return value
        }
        report(.outOfRange, at: mark, path: path, problem, hint: hint)
        return nil
    }
}

/// An item of a list, with its path (`sources[2]`).
public struct ConfigElement: Sendable {
    public var node: ConfigNode
    public var path: ConfigPath

    public init(node: ConfigNode, path: ConfigPath) {
        self.node = node
        self.path = path
    }
}

/// Writes a number without a needless `.0`: `1000`, `0.5`.
func formatNumber(_ value: Double) -> String {
    if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
    return String(value)
}
