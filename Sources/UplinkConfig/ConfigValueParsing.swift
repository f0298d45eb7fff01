/// Why a configuration value could not be parsed: a complete message that quotes the value, and an optional hint.
public struct ConfigValueError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, e.g. `invalid duration '10': a unit is required`.
    public var message: String
    /// How to fix it, e.g. `write '10s' for seconds, …`.
    public var hint: String?

    public init(message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }

    public var description: String {
        hint.map { "\(message) (hint: \($0))" } ?? message
    }
}

/// Parsing and formatting of the value syntaxes shared by every configuration section: durations and sizes.
///
/// ## Durations
///
/// One or more `<number><unit>` parts, optionally separated by spaces, added together: `250ms`, `10s`, `1.5s`,
/// `5m`, `1h`, `1h30m`. Units: `ns`, `us` (or `µs`), `ms`, `s`, `m`, `h`. Numbers are decimal with an optional
/// fraction (`1.5s`); the total must be a whole number of nanoseconds. A bare number is rejected because it is
/// ambiguous (seconds? milliseconds?). Durations cannot be negative.
///
/// ## Sizes
///
/// A decimal number of bytes, optionally followed by a unit, with or without a space: `512`, `512B`, `16MB`,
/// `64KiB`, `1.5GiB`. Decimal units `KB`, `MB`, `GB`, `TB` are powers of 1000; binary units `KiB`, `MiB`, `GiB`,
/// `TiB` are powers of 1024. Units are case-sensitive (`kb` is rejected with a hint). The total must be a whole
/// number of bytes that fits in `Int`.
public enum ConfigValueParsing {
    /// The duration units, in the order they are listed in messages, with their length in nanoseconds.
    static let durationUnits: [(name: String, nanoseconds: Int128)] = [
        ("ns", 1), ("us", 1_000), ("µs", 1_000), ("ms", 1_000_000), ("s", 1_000_000_000),
        ("m", 60_000_000_000), ("h", 3_600_000_000_000),
    ]

    /// The size units with their length in bytes.
    static let sizeUnits: [(name: String, bytes: Int128)] = [
        ("B", 1),
        ("KB", 1_000), ("MB", 1_000_000), ("GB", 1_000_000_000), ("TB", 1_000_000_000_000),
        ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40),
    ]

    static let durationUnitList = "ns, us, ms, s, m, h"
    static let sizeUnitList = "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB"

    /// Parses a duration such as `250ms`, `10s`, `1.5s`, `5m`, `1h` or `1h30m`.
    /// - Throws: `ConfigValueError` whose message quotes `text` and says precisely what is wrong.
    public static func duration(_ text: String) throws(ConfigValueError) -> Duration {
        let example = "e.g. '250ms', '10s', '1.5s', '5m' or '1h'"
        let quantity = QuantityText(text: text, kind: "duration", example: example)
        var scanner = try quantity.scannerAtNumber()
        var total: Int128 = 0
        while !scanner.isAtEnd {
            guard let number = scanner.number() else {
                throw quantity.fail("expected a number followed by a unit", hint: example)
            }
            scanner.skipSpaces()
            let unit = scanner.letters()
            if unit.isEmpty {
                if scanner.isAtEnd {
                    let hint = "write '\(number.text)s' for seconds or '\(number.text)ms' for milliseconds; units: \(durationUnitList)"
                    throw quantity.fail("a unit is required", hint: hint)
                }
                throw quantity.fail("unexpected '\(scanner.rest)'", hint: example)
            }
            guard let scale = durationUnits.first(where: { $0.name == unit })?.nanoseconds else {
                throw quantity.fail("unknown unit '\(unit)'", hint: durationUnitHint(for: unit))
            }
            switch number.scaled(by: scale) {
            case .value(let nanoseconds):
                total += nanoseconds
                if total > Int128(Int64.max) { throw quantity.fail("it is too large") }
            case .notWhole: throw quantity.fail("it is not a whole number of nanoseconds")
            case .tooLarge: throw quantity.fail("it is too large")
            }
            scanner.skipSpaces()
        }
        return .nanoseconds(Int64(total))
    }

    /// Parses a size in bytes such as `512`, `512B`, `16MB`, `64KiB` or `1.5GiB`.
    /// - Throws: `ConfigValueError` whose message quotes `text` and says precisely what is wrong.
    public static func size(_ text: String) throws(ConfigValueError) -> Int {
        let example = "e.g. '512B', '64KiB', '16MiB' or '1GB'"
        let quantity = QuantityText(text: text, kind: "size", example: example)
        var scanner = try quantity.scannerAtNumber()
        guard let number = scanner.number() else {
            throw quantity.fail("expected a number of bytes, optionally followed by a unit", hint: example)
        }
        scanner.skipSpaces()
        let unit = scanner.letters()
        scanner.skipSpaces()
        if !scanner.isAtEnd { throw quantity.fail("unexpected '\(scanner.rest)'", hint: example) }
        let scale: Int128
        if unit.isEmpty {
            scale = 1
        } else if let known = sizeUnits.first(where: { $0.name == unit }) {
            scale = known.bytes
        } else {
            throw quantity.fail("unknown unit '\(unit)'", hint: sizeUnitHint(for: unit))
        }
        switch number.scaled(by: scale) {
        case .value(let bytes) where bytes <= Int128(Int.max): return Int(bytes)
        case .value, .tooLarge: throw quantity.fail("it is too large")
        case .notWhole: throw quantity.fail("it is not a whole number of bytes")
        }
    }

    /// The shortest exact spelling of `duration` in the syntax `duration(_:)` accepts: `250ms`, `30s`, `5m`, `1h`,
    /// `1500ms`. Negative durations are written with a leading `-` (which `duration(_:)` rejects).
    public static func format(duration: Duration) -> String {
        let nanoseconds = Int128(duration.nanoseconds)
        if nanoseconds == 0 { return "0s" }
        let sign = nanoseconds < 0 ? "-" : ""
        let magnitude = nanoseconds.magnitude
        for (name, scale) in durationUnits.reversed() where name != "µs" {
            if magnitude % scale.magnitude == 0 { return "\(sign)\(magnitude / scale.magnitude)\(name)" }
        }
        return "\(sign)\(magnitude)ns"
    }

    /// The shortest exact spelling of `bytes` in the syntax `size(_:)` accepts, preferring binary units:
    /// `64MiB`, `4KiB`, `1MB`, `1500B`.
    public static func format(size bytes: Int) -> String {
        if bytes == 0 { return "0B" }
        let value = Int128(bytes)
        for (name, scale) in sizeUnits.reversed() where scale > 1 && value % scale == 0 {
            // Binary units come last in `sizeUnits`, so they are tried first here.
            return "\(value / scale)\(name)"
        }
        return "\(bytes)B"
    }

    private static func durationUnitHint(for unit: String) -> String {
        let aliases: [String: String] = [
            "sec": "s", "secs": "s", "second": "s", "seconds": "s", "S": "s",
            "min": "m", "mins": "m", "minute": "m", "minutes": "m", "M": "m",
            "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "H": "h",
            "msec": "ms", "msecs": "ms", "millis": "ms", "millisecond": "ms", "milliseconds": "ms", "MS": "ms",
            "usec": "us", "micros": "us", "microsecond": "us", "microseconds": "us",
            "nsec": "ns", "nanos": "ns", "nanosecond": "ns", "nanoseconds": "ns",
        ]
        if let known = aliases[unit] { return "did you mean '\(known)'? units: \(durationUnitList)" }
        if unit == "d" || unit == "day" || unit == "days" { return "days are not supported; write '24h'" }
        return "units: \(durationUnitList)"
    }

    private static func sizeUnitHint(for unit: String) -> String {
        let upper = String(unit.uppercased())
        let prefix = upper.first.map(String.init) ?? ""
        if ["K", "M", "G", "T"].contains(prefix), upper == prefix || upper == prefix + "B" || upper == prefix + "IB" {
            return "did you mean '\(prefix)iB' (1024-based) or '\(prefix)B' (1000-based)? units: \(sizeUnitList)"
        }
        if upper == "B" || upper == "BYTE" || upper == "BYTES" { return "did you mean 'B'? units: \(sizeUnitList)" }
        return "units: \(sizeUnitList)"
    }
}

/// A duration or size as written, and the errors that quote it: what `duration(_:)` and `size(_:)` share.
private struct QuantityText {
    let text: String
    /// `duration` or `size`, for the messages.
    let kind: String
    /// Valid spellings, the hint of an empty text.
    let example: String

    /// `invalid <kind> '<text>': <problem>`.
    func fail(_ problem: String, hint: String? = nil) -> ConfigValueError {
        ConfigValueError(message: "invalid \(kind) '\(text)': \(problem)", hint: hint)
    }

    /// A scanner at the first number: past leading spaces and a `+`.
    /// - Throws: When the text is empty or negative.
    func scannerAtNumber() throws(ConfigValueError) -> Scanner {
        var scanner = Scanner(text)
        scanner.skipSpaces()
        if scanner.isAtEnd { throw fail("it is empty", hint: example) }
        if scanner.peek == "-" { throw fail("\(kind)s cannot be negative") }
        if scanner.peek == "+" { scanner.advance() }
        return scanner
    }
}

/// A decimal number as written: its digits before and after the point, kept exact.
private struct DecimalNumber {
    enum Scaled {
        case value(Int128)
        case notWhole
        case tooLarge
    }

    var text: String
    var integer: Int128
    /// The significant digits after the point (trailing zeros removed) as an integer, and how many there are.
    var fraction: Int128
    var fractionDigits: Int
    /// More than 25 digits before the point.
    var tooLarge: Bool
    /// More than 24 significant digits after the point: finer than a nanosecond or a byte for every unit.
    var tooPrecise: Bool

    /// `self × scale`, exactly.
    func scaled(by scale: Int128) -> Scaled {
        if tooLarge { return .tooLarge }
        if tooPrecise { return .notWhole }
        // integer < 10^25 and scale < 2^42, so neither product overflows Int128 (about 1.7 × 10^38).
        let wholePart = integer * scale
        if fractionDigits == 0 { return .value(wholePart) }
        var divisor: Int128 = 1
        for _ in 0..<fractionDigits { divisor *= 10 }
        let fractional = fraction * scale
        if fractional % divisor != 0 { return .notWhole }
        return .value(wholePart + fractional / divisor)
    }
}

/// A cursor over the Unicode scalars of a value.
private struct Scanner {
    let scalars: [Unicode.Scalar]
    var index = 0

    init(_ text: String) { scalars = Array(text.unicodeScalars) }

    var isAtEnd: Bool { index >= scalars.count }
    var peek: Unicode.Scalar? { isAtEnd ? nil : scalars[index] }
    var rest: String {
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars[index...])
        return text
    }

    mutating func advance() { index += 1 }

    mutating func skipSpaces() {
        while let scalar = peek, scalar == " " || scalar == "\t" { advance() }
    }

    /// Letters (ASCII and others such as `µ`) at the cursor.
    mutating func letters() -> String {
        var text = ""
        while let scalar = peek, scalar.properties.isAlphabetic { text.unicodeScalars.append(scalar); advance() }
        return text
    }

    /// `digits[.digits]` at the cursor, or nil (cursor unchanged) when there is no digit.
    mutating func number() -> DecimalNumber? {
        let start = index
        var integer: Int128 = 0
        var integerDigits = 0
        while let digit = peek?.decimalDigit {
            if integer > 0 || digit > 0 { integerDigits += 1 }
            if integerDigits <= 25 { integer = integer * 10 + digit }
            advance()
        }
        guard index > start else { return nil }
        var fractionText: [Int128] = []
        if peek == ".", index + 1 < scalars.count, scalars[index + 1].decimalDigit != nil {
            advance()
            while let digit = peek?.decimalDigit {
                fractionText.append(digit)
                advance()
            }
        }
        while fractionText.last == 0 { fractionText.removeLast() }
        var fraction: Int128 = 0
        if fractionText.count <= 24 {
            for digit in fractionText { fraction = fraction * 10 + digit }
        }
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars[start..<index])
        return DecimalNumber(
            text: text, integer: integer, fraction: fraction, fractionDigits: fractionText.count,
            tooLarge: integerDigits > 25, tooPrecise: fractionText.count > 24)
    }
}

extension Unicode.Scalar {
    fileprivate var decimalDigit: Int128? {
        ("0"..."9").contains(self) ? Int128(value - 48) : nil
    }
}
