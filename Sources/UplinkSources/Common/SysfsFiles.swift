#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import UplinkFiles

/// Directory listings and small text files of sysfs (and other pseudo file systems).
enum Sysfs {
    /// The entry names of directory `path` (without `.` and `..`), sorted in natural order (`hwmon2` before
    /// `hwmon10`), or `nil` when it cannot be opened (missing, not a directory, access denied).
    static func list(_ path: String) -> [String]? {
        guard let names = try? Directories.list(path) else { return nil }
        return names.sorted(by: naturalOrder)
    }

    /// Entries of `path` named `<prefix><digits>`, e.g. `thermal_zone0`, in natural order.
    static func numbered(_ path: String, prefix: String) -> [String]? {
        list(path)?.filter { name in
            name.hasPrefix(prefix) && name.count > prefix.count && name.dropFirst(prefix.count).allSatisfy(\.isASCII)
                && name.dropFirst(prefix.count).allSatisfy(\.isNumber)
        }
    }

    /// The text of a small file with surrounding whitespace (the trailing newline) removed, or `nil` when it
    /// cannot be read or is not valid UTF-8.
    static func readText(_ path: String) -> String? {
        var reader = SmallFileReader(path: path, initialCapacity: 256, maximumSize: 64 * 1024)
        guard (try? reader.read()) != nil else { return nil }
        return reader.withContents { bytes in
            let range = ByteParsing.trimmed(bytes, 0..<bytes.count)
            return String(validating: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }
    }

    /// The last component of what the symbolic link at `path` points to (`…/devices/…/nvme0` → `nvme0`), nil when
    /// `path` is not a link.
    static func linkTargetName(_ path: String) -> String? {
        guard let target = SymbolicLink.target(of: path) else { return nil }
        let name = target.split(separator: "/").last.map(String.init)
        return name.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `a` before `b` comparing runs of digits by value: `in2` < `in10`.
    static func naturalOrder(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var i = 0
        var j = 0
        while i < x.count, j < y.count {
            if ByteParsing.isDigit(x[i]), ByteParsing.isDigit(y[j]) {
                var endI = i
                while endI < x.count, ByteParsing.isDigit(x[endI]) { endI += 1 }
                var endJ = j
                while endJ < y.count, ByteParsing.isDigit(y[endJ]) { endJ += 1 }
                // Compare by length after leading zeros, then digit by digit.
                var startI = i
                while startI < endI - 1, x[startI] == UInt8(ascii: "0") { startI += 1 }
                var startJ = j
                while startJ < endJ - 1, y[startJ] == UInt8(ascii: "0") { startJ += 1 }
                if endI - startI != endJ - startJ { return endI - startI < endJ - startJ }
                for k in 0..<(endI - startI) where x[startI + k] != y[startJ + k] {
                    return x[startI + k] < y[startJ + k]
                }
                i = endI
                j = endJ
            } else {
                if x[i] != y[j] { return x[i] < y[j] }
                i += 1
                j += 1
            }
        }
        return x.count - i < y.count - j
    }
}

/// One numeric file (a sysfs attribute such as `temp1_input`) read again on every tick, into a reused buffer.
struct NumericFileReader: Sendable {
    private var reader: SmallFileReader

    init(path: String) {
        reader = SmallFileReader(path: path, initialCapacity: 64, maximumSize: 4096)
    }

    var path: String { reader.pathString }

    /// The file's value as an integer (sysfs writes them in decimal, possibly negative), or `nil` when the
    /// file cannot be read (a sensor that is powered down answers `EIO` or `ENODATA`) or holds no integer.
    mutating func readInteger() -> Int64? {
        guard (try? reader.read()) != nil else { return nil }
        return reader.withContents { bytes in
            ByteParsing.parseInt64(bytes, ByteParsing.trimmed(bytes, 0..<bytes.count))
        }
    }
}

extension ByteParsing {
    /// `range` without leading and trailing blanks and line breaks.
    static func trimmed(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound
        var upper = min(range.upperBound, bytes.count)
        while lower < upper, isBlank(bytes[lower]) || bytes[lower] == UInt8(ascii: "\n") { lower += 1 }
        while upper > lower, isBlank(bytes[upper - 1]) || bytes[upper - 1] == UInt8(ascii: "\n") { upper -= 1 }
        return lower..<upper
    }

    /// A decimal integer with an optional `-` or `+` sign filling all of `range`, or `nil` (also on overflow).
    static func parseInt64(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int64? {
        guard !range.isEmpty, range.upperBound <= bytes.count else { return nil }
        let first = bytes[range.lowerBound]
        let negative = first == UInt8(ascii: "-")
        let digits = (negative || first == UInt8(ascii: "+")) ? (range.lowerBound + 1)..<range.upperBound : range
        guard let magnitude = parseUInt64(bytes, digits) else { return nil }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { return nil }
        return Int64(magnitude)
    }

    /// A finite decimal number filling all of `range`: optional sign, digits with an optional fraction, an
    /// optional exponent (`-12.5`, `.5`, `3e-2`). `nil` for anything else, including `nan`, `inf` and hex.
    static func parseDouble(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Double? {
        guard !range.isEmpty, range.count <= 64, range.upperBound <= bytes.count else { return nil }
        var index = range.lowerBound
        if bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
        var mantissaDigits = 0
        while index < range.upperBound, isDigit(bytes[index]) {
            index += 1
            mantissaDigits += 1
        }
        if index < range.upperBound, bytes[index] == UInt8(ascii: ".") {
            index += 1
            while index < range.upperBound, isDigit(bytes[index]) {
                index += 1
                mantissaDigits += 1
            }
        }
        guard mantissaDigits > 0 else { return nil }
        if index < range.upperBound, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < range.upperBound, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
                index += 1
            }
            var exponentDigits = 0
            while index < range.upperBound, isDigit(bytes[index]) {
                index += 1
                exponentDigits += 1
            }
            guard exponentDigits > 0 else { return nil }
        }
        guard index == range.upperBound else { return nil }
        guard let text = String(validating: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self),
            let value = Double(text), value.isFinite
        else { return nil }
        return value
    }
}
