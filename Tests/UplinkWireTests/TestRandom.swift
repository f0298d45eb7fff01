import UplinkCore

/// Random test values from UplinkCore's seeded SplitMix64, so that random tests are reproducible.
extension SplitMix64 {
    /// A string mixing plain ASCII, every control character, quotes, backslashes, multi-byte characters and
    /// arbitrary Unicode scalars.
    mutating func string(maxLength: Int = 24) -> String {
        let length = Int.random(in: 0...maxLength, using: &self)
        var scalars = String.UnicodeScalarView()
        for _ in 0..<length {
            switch Int.random(in: 0..<10, using: &self) {
            case 0: scalars.append(Unicode.Scalar(UInt8.random(in: 0..<0x20, using: &self)))
            case 1: scalars.append(([#"""#, #"\"#, "/", "\u{7F}", "\u{0}"] as [Unicode.Scalar]).randomElement(using: &self)!)
            case 2: scalars.append((["é", "€", "😀", "\u{FFFD}", "\u{FEFF}", "\u{2028}", "\u{10FFFF}"] as [Unicode.Scalar]).randomElement(using: &self)!)
            case 3:
                var value = UInt32.random(in: 0x80...0x10FFFF, using: &self)
                if (0xD800...0xDFFF).contains(value) { value = 0xE000 }
                scalars.append(Unicode.Scalar(value)!)
            default: scalars.append(Unicode.Scalar(UInt8.random(in: 0x20..<0x7F, using: &self)))
            }
        }
        return String(scalars)
    }

    /// Bytes that are often not valid UTF-8: truncated sequences, lone continuation bytes, overlongs, surrogates.
    mutating func messyBytes(maxLength: Int = 40) -> [UInt8] {
        let length = Int.random(in: 0...maxLength, using: &self)
        var bytes: [UInt8] = []
        while bytes.count < length {
            switch Int.random(in: 0..<8, using: &self) {
            case 0: bytes.append(UInt8.random(in: 0x80...0xFF, using: &self))
            case 1: bytes.append(contentsOf: [[0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
                                              [0xF0, 0x9F, 0x98], [0xE2, 0x82], [0xC3], [0xFF, 0xFE]].randomElement(using: &self)!)
            case 2: bytes.append(contentsOf: Array("é€😀".utf8))
            case 3: bytes.append(UInt8.random(in: 0..<0x20, using: &self))
            case 4: bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: "\\")])
            default: bytes.append(UInt8.random(in: 0x20..<0x7F, using: &self))
            }
        }
        return bytes
    }

    mutating func double() -> Double {
        switch Int.random(in: 0..<12, using: &self) {
        case 0: return [0, -0.0, 1e-7, 0.1, -1.5, 1e300, -1e-300, 123456.789].randomElement(using: &self)!
        case 1: return [.nan, .infinity, -.infinity, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
                        -.greatestFiniteMagnitude, .leastNormalMagnitude, 9_007_199_254_740_992, 9_007_199_254_740_992.0.nextUp].randomElement(using: &self)!
        case 2: return Double(Int64.random(in: Int64.min...Int64.max, using: &self))
        case 3: return Double(Int.random(in: -1000...1000, using: &self))
        case 4:
            let bits = UInt64.random(in: 0...UInt64.max, using: &self)
            return Double(bitPattern: bits)  // any pattern, including NaNs and infinities
        default: return Double.random(in: -1e6...1e6, using: &self)
        }
    }

    mutating func tags() -> [Tag] {
        (0..<Int.random(in: 0...3, using: &self)).map { _ in Tag(string(maxLength: 8), string(maxLength: 12)) }
    }

    mutating func record() -> Record {
        let timestamp = Bool.random(using: &self)
            ? Int64.random(in: Int64.min...Int64.max, using: &self) : Int64.random(in: 0...2_000_000_000_000_000_000, using: &self)
        if Bool.random(using: &self) {
            return .metric(
                string(maxLength: 16), value: double(), unit: string(maxLength: 6), tags: tags(), source: string(maxLength: 10),
                timestamp: timestamp)
        }
        return .log(string(maxLength: 60), fields: tags(), source: string(maxLength: 10), timestamp: timestamp)
    }
}
