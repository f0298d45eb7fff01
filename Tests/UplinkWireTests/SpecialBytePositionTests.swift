import CJSONBytes
import Testing
import UplinkCore
import UplinkTestSupport
import UplinkWire

/// The encoder copies and the decoder skips plain string bytes 16 at a time (SSE2) or eight at a time, then one at a
/// time (CJSONBytes): whatever position a byte that needs work takes in a message, the line decodes back to the
/// message.
@Suite("JSON strings: a special byte at every position", .computeBound)
struct SpecialBytePositionTests {
    /// A quote, a backslash, control characters and non-ASCII bytes at the edges of their ranges.
    static let special: [UInt8] = [0x22, 0x5C, 0x00, 0x0A, 0x1F, 0x80, 0xC3, 0xFF]

    @Test("the plain prefix ends at the first special byte, wherever it is; DEL and the rest of ASCII are plain")
    func plainPrefixEndsAtTheFirstSpecialByte() {
        let plainBytes: [UInt8] = [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7E, 0x7F]
        for count in 0...70 {
            for position in 0...count {
                for special in Self.special {
                    var message = (0..<count).map { plainBytes[$0 % plainBytes.count] }
                    if position < count { message[position] = special }
                    // A special byte after the first must not move the answer.
                    if position + 1 < count { message[count - 1] = 0x22 }
                    let expected = position < count ? position : count
                    var copy = [UInt8](repeating: 0xAA, count: count)
                    let (plain, copied) = message.withUnsafeBytes { source in
                        copy.withUnsafeMutableBytes { destination in
                            (uplink_json_plain_prefix(source.baseAddress, count),
                             uplink_json_copy_plain_prefix(destination.baseAddress, source.baseAddress, count))
                        }
                    }
                    #expect(plain == expected, "length \(count), \(special) at \(position)")
                    #expect(copied == expected, "length \(count), \(special) at \(position)")
                    #expect(copy[..<expected] == message[..<expected], "length \(count), \(special) at \(position)")
                }
            }
        }
    }

    @Test("the encoder's output of every special byte at every position decodes back to the message")
    func encoderRoundTrips() {
        let encoder = NDJSONFrameEncoder()
        for count in 1...70 {
            for position in 0..<count {
                for special in Self.special {
                    var message = [UInt8](repeating: UInt8(ascii: "a"), count: count)
                    message[position] = special
                    var frame: [UInt8] = []
                    message.withUnsafeBytes { encoder.encodeLogFrame(timestamp: 1, source: "s", message: $0, fields: [], into: &frame) }
                    let bytes = RoundTripTests.line(sequence: 1, frame: frame)
                    let expected = Record.log(String(decoding: message, as: UTF8.self), source: "s", timestamp: 1)
                    guard case .success(.record(1, let decoded)) = decodeLine(bytes) else {
                        Issue.record("not decoded: length \(count), \(special) at \(position)")
                        continue
                    }
                    #expect(decoded == expected, "length \(count), \(special) at \(position)")
                }
            }
        }
    }
}
