import UplinkCore

/// Byte-level JSON output: strings escaped and repaired, integers and doubles written without `JSONEncoder`
/// or intermediate `String`s where avoidable.
enum JSONWriting {
    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
    private static let replacementCharacter: [UInt8] = [0xEF, 0xBF, 0xBD]

    /// Appends `string` as a quoted JSON string.
    @inline(__always)
    static func appendString(_ string: String, to output: inout [UInt8]) {
        var string = string
        string.withUTF8 { appendString(bytes: UnsafeRawBufferPointer($0), to: &output) }
    }

    /// Appends arbitrary bytes as a quoted JSON string: quotes, backslashes and control characters escaped,
    /// ill-formed UTF-8 replaced by U+FFFD, so the result is always valid JSON.
    static func appendString(bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var runStart = 0
        var index = 0
        let count = bytes.count
        while index < count {
            // Eight plain bytes at a time (the same test the decoder uses): most text needs no escaping.
            while index &+ 8 <= count,
                !JSONScanner.needsAttention(bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            {
                index &+= 8
            }
            guard index < count else { break }
            let byte = bytes[index]
            if byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            if byte >= 0x80 {
                let (length, valid) = UTF8Validation.sequence(in: bytes, at: index)
                if valid {
                    index += length
                    continue
                }
                flush(bytes, from: runStart, to: index, into: &output)
                output.append(contentsOf: replacementCharacter)
                index += length
                runStart = index
                continue
            }
            flush(bytes, from: runStart, to: index, into: &output)
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            default:
                output.append(contentsOf: [
                    UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                    hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)],
                ])
            }
            index += 1
            runStart = index
        }
        flush(bytes, from: runStart, to: count, into: &output)
        output.append(UInt8(ascii: "\""))
    }

    @inline(__always)
    private static func flush(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int, into output: inout [UInt8]) {
        if end > start { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<end])) }
    }

    /// Appends a signed integer in decimal.
    @inline(__always)
    static func appendInteger(_ value: Int64, to output: inout [UInt8]) {
        if value < 0 {
            output.append(UInt8(ascii: "-"))
            appendInteger(UInt64(bitPattern: 0 &- value), to: &output)  // magnitude, also right for Int64.min
        } else {
            appendInteger(UInt64(value), to: &output)
        }
    }

    /// Appends an unsigned integer in decimal.
    @inline(__always)
    static func appendInteger(_ value: UInt64, to output: inout [UInt8]) {
        withUnsafeTemporaryAllocation(byteCount: 20, alignment: 1) { scratch in
            let count = writeDecimal(value, to: scratch.baseAddress!)
            output.append(contentsOf: UnsafeRawBufferPointer(start: scratch.baseAddress, count: count))
        }
    }

    /// Writes the decimal digits of `value` at `destination`, which has room for 20 bytes; returns how many.
    @inline(__always)
    static func writeDecimal(_ value: UInt64, to destination: UnsafeMutableRawPointer) -> Int {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch on the stack
        return withUnsafeMutableBytes(of: &digits) { scratch in
            var value = value
            var position = 20
            repeat {
                position -= 1
                scratch[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10)
                value /= 10
            } while value != 0
            let count = 20 - position
            destination.copyMemory(from: scratch.baseAddress! + position, byteCount: count)
            return count
        }
    }

    /// Appends a number; integral values below 2^53 are written without a fraction, non-finite ones as `null`.
    static func appendNumber(_ value: Double, to output: inout [UInt8]) {
        guard value.isFinite else {
            output.append(contentsOf: "null".utf8)
            return
        }
        if value == value.rounded(.towardZero) && abs(value) < 9_007_199_254_740_992 {
            if value == 0 && value.sign == .minus {
                output.append(UInt8(ascii: "0"))
            } else {
                appendInteger(Int64(value), to: &output)
            }
            return
        }
        // Swift prints the shortest representation that reads back exactly, e.g. "0.1", "1e-07", "1.5e+300",
        // all of which are valid JSON numbers.
        output.append(contentsOf: value.description.utf8)
    }

    /// Appends `{"key":"value",...}` for the tags.
    static func appendObject(_ tags: [Tag], to output: inout [UInt8]) {
        output.append(UInt8(ascii: "{"))
        for (index, tag) in tags.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            appendString(tag.key, to: &output)
            output.append(UInt8(ascii: ":"))
            appendString(tag.value, to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }
}
