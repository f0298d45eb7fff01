import UplinkCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where `${VAR}` references in a configuration get their values: the process environment, or a fixed
/// dictionary (tests, or a caller that assembled its own environment).
public struct ConfigEnvironment: Sendable, ExpressibleByDictionaryLiteral {
    private enum Storage: Sendable {
        case process
        case values([String: String])
    }

    private let storage: Storage

    /// The process environment, read with `getenv(3)` at the time of each lookup.
    public static let process = ConfigEnvironment(storage: .process)

    private init(storage: Storage) {
        self.storage = storage
    }

    /// A fixed set of variables; every other variable is unset.
    public init(_ values: [String: String]) {
        storage = .values(values)
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    /// The value of `name`, or nil when it is not set.
    public func value(of name: String) -> String? {
        switch storage {
        case .values(let values):
            return values[name]
        case .process:
            guard let pointer = getenv(name) else { return nil }
            return String(cString: pointer)
        }
    }
}

/// A problem found while substituting `${VAR}` references in one value.
struct SubstitutionProblem: Equatable {
    var code: ConfigIssue.Code
    var message: String
    var hint: String?
}

/// `${VAR}` substitution.
///
/// - `${NAME}` is replaced by the value of the environment variable `NAME` (letters, digits and `_`, not starting
///   with a digit). An unset variable is a problem; a variable set to the empty string yields the empty string.
/// - `${NAME:-default}` is replaced by the variable's value, or by `default` when the variable is unset or empty.
///   The default is taken literally up to the first `}`.
/// - `$${` is a literal `${`. Any other `$` is kept as is (`$HOME` is not substituted: use `${HOME}`).
enum EnvironmentSubstitution {
    /// The text with every reference substituted, and the problems found (unset variables are replaced by `""`).
    static func substitute(_ text: String, environment: ConfigEnvironment) -> (value: String, problems: [SubstitutionProblem]) {
        guard text.utf8.contains(UInt8(ascii: "$")) else { return (text, []) }
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var problems: [SubstitutionProblem] = []
        var index = 0
        let dollar = UInt8(ascii: "$"), open = UInt8(ascii: "{"), close = UInt8(ascii: "}")
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == dollar else {
                output.append(byte)
                index += 1
                continue
            }
            // `$${` → literal `${`.
            if index + 2 < bytes.count, bytes[index + 1] == dollar, bytes[index + 2] == open {
                output.append(dollar)
                output.append(open)
                index += 3
                continue
            }
            guard index + 1 < bytes.count, bytes[index + 1] == open else {
                output.append(byte)
                index += 1
                continue
            }
            guard let end = bytes[(index + 2)...].firstIndex(of: close) else {
                problems.append(SubstitutionProblem(
                    code: .invalidValue,
                    message: "unterminated '${' in '\(text)'",
                    hint: "close the reference with '}', or write '$${' for a literal '${'"))
                output.append(contentsOf: bytes[index...])
                break
            }
            let body = String(decoding: bytes[(index + 2)..<end], as: UTF8.self)
            index = end + 1
            let name: String
            let fallback: String?
            if let separator = body.firstRange(of: ":-") {
                name = String(body[..<separator.lowerBound])
                fallback = String(body[separator.upperBound...])
            } else {
                name = body
                fallback = nil
            }
            guard isValidName(name) else {
                problems.append(SubstitutionProblem(
                    code: .invalidValue,
                    message: "invalid environment variable reference '${\(body)}'",
                    hint: "names are letters, digits and '_', not starting with a digit; write '$${' for a literal '${'"))
                continue
            }
            let value = environment.value(of: name)
            if let fallback, value?.isEmpty ?? true {
                output.append(contentsOf: fallback.utf8)
            } else if let value {
                output.append(contentsOf: value.utf8)
            } else {
                problems.append(SubstitutionProblem(
                    code: .unsetVariable,
                    message: "environment variable '\(name)' is not set",
                    hint: "set it, or give a default: '${\(name):-default}'"))
            }
        }
        return (String(decoding: output, as: UTF8.self), problems)
    }

    static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
}
