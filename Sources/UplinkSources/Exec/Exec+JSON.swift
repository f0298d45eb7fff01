extension ExecSource {
    /// A JSON document: an object's numbers (at any depth, names joined by `.`) and booleans (1 or 0) become
    /// `<prefix>.<path>`; strings, nulls and arrays are skipped. A top-level number becomes `metric`. Output that
    /// is not JSON counts as one malformed value; so does a document nested deeper than 32 levels.
    static func parseJSON(_ output: [UInt8], prefix: String, metric: String) -> ParsedOutput {
        var parser = JSONNumbers(bytes: output)
        var result = ParsedOutput()
        parser.skipBlanks()
        if parser.peek() == UInt8(ascii: "{") {
            guard parser.parseValue(path: prefix, depth: 0, into: &result.metrics) else {
                return ParsedOutput(metrics: [], malformed: 1)
            }
        } else {
            var metrics: [ParsedMetric] = []
            guard parser.parseValue(path: metric, depth: 0, into: &metrics), metrics.count == 1 else {
                return ParsedOutput(metrics: [], malformed: 1)
            }
            result.metrics = metrics
        }
        parser.skipBlanks()
        guard parser.atEnd else { return ParsedOutput(metrics: [], malformed: 1) }
        return result
    }

    /// A small recursive-descent JSON reader that keeps only numbers and booleans.
    struct JSONNumbers {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index >= bytes.count }

        func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipBlanks() {
            while let byte = peek(), byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func literal(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard index + count <= bytes.count else { return false }
            for offset in 0..<count where bytes[index + offset] != text.utf8Start[offset] { return false }
            index += count
            return true
        }

        /// Parses one value; numbers and booleans are appended under `path`. Returns false on a syntax error.
        mutating func parseValue(path: String, depth: Int, into metrics: inout [ParsedMetric]) -> Bool {
            guard depth < 32 else { return false }
            skipBlanks()
            guard let byte = peek() else { return false }
            switch byte {
            case UInt8(ascii: "{"):
                return parseMembers(closing: UInt8(ascii: "}")) { parser in
                    parser.skipBlanks()
                    guard let key = parser.parseString() else { return false }
                    parser.skipBlanks()
                    guard parser.peek() == UInt8(ascii: ":") else { return false }
                    parser.index += 1
                    return parser.parseValue(path: path.isEmpty ? key : path + "." + key, depth: depth + 1, into: &metrics)
                }
            case UInt8(ascii: "["):
                var ignored: [ParsedMetric] = []
                return parseMembers(closing: UInt8(ascii: "]")) { parser in
                    parser.parseValue(path: path, depth: depth + 1, into: &ignored)
                }
            case UInt8(ascii: "\""):
                return parseString() != nil
            case UInt8(ascii: "t"):
                guard literal("true") else { return false }
                metrics.append(ParsedMetric(name: path, value: 1))
                return true
            case UInt8(ascii: "f"):
                guard literal("false") else { return false }
                metrics.append(ParsedMetric(name: path, value: 0))
                return true
            case UInt8(ascii: "n"):
                return literal("null")
            default:
                let start = index
                while let next = peek(), next == UInt8(ascii: "-") || next == UInt8(ascii: "+") || next == UInt8(ascii: ".")
                    || next | 0x20 == UInt8(ascii: "e") || ByteParsing.isDigit(next)
                {
                    index += 1
                }
                let value = bytes.withUnsafeBufferPointer { ByteParsing.parseDouble($0, start..<index) }
                guard let value else { return false }
                metrics.append(ParsedMetric(name: path, value: value))
                return true
            }
        }

        /// The members of an object or the elements of an array, from its opening bracket at `index` through its
        /// `closing` one: `member` reads each (a key and its value, or a value), members are separated by `,`.
        /// Returns false on a syntax error.
        mutating func parseMembers(closing: UInt8, _ member: (inout JSONNumbers) -> Bool) -> Bool {
            index += 1
            skipBlanks()
            if peek() == closing {
                index += 1
                return true
            }
            while true {
                guard member(&self) else { return false }
                skipBlanks()
                if peek() == UInt8(ascii: ",") {
                    index += 1
                    continue
                }
                guard peek() == closing else { return false }
                index += 1
                return true
            }
        }

        /// A string (the opening quote at `index`), with the escapes JSON allows; `nil` on a syntax error.
        mutating func parseString() -> String? {
            guard peek() == UInt8(ascii: "\"") else { return nil }
            index += 1
            var scalars: [UInt8] = []
            while let byte = peek() {
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: scalars, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escape = peek() else { return nil }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "n"): scalars.append(0x0A)
                    case UInt8(ascii: "t"): scalars.append(0x09)
                    case UInt8(ascii: "r"): scalars.append(0x0D)
                    case UInt8(ascii: "b"): scalars.append(0x08)
                    case UInt8(ascii: "f"): scalars.append(0x0C)
                    case UInt8(ascii: "u"):
                        guard index + 4 <= bytes.count,
                            let code = UInt32(String(decoding: bytes[index..<(index + 4)], as: UTF8.self), radix: 16)
                        else { return nil }
                        index += 4
                        let scalar = Unicode.Scalar(code) ?? "\u{FFFD}"
                        scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default: scalars.append(escape)
                    }
                default:
                    scalars.append(byte)
                }
            }
            return nil
        }
    }
}
