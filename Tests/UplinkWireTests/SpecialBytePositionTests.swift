import Testing
import UplinkCore
import UplinkTestSupport
import UplinkWire

/// The encoder copies and the decoder skips plain string bytes eight at a time, then one at a time: whatever position
/// a byte that needs work takes in a message, the line decodes back to the message.
@Suite("JSON strings: a special byte at every position", .computeBound)
struct SpecialBytePositionTests {
    /// A quote, a backslash, control characters and non-ASCII bytes at the edges of their ranges.
    static let special: [UInt8] = [0x22, 0x5C, 0x00, 0x0A, 0x1F, 0x80, 0xC3, 0xFF]

    @Test("the encoder's output of every special byte at every position decodes back to the message")
    func encoderRoundTrips() {
        let encoder = NDJSONFrameEncoder()
        for count in 1...40 {
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
