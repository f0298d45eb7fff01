import NIOCore
import Testing
import UplinkTestSupport
import UplinkWire

@Suite(.computeBound) struct AckLineTests {
    static func parse(_ text: String) -> AckLine? {
        Array(text.utf8).withUnsafeBytes { AckLine.parse($0) }
    }

    @Test(arguments: [
        (#"{"resume":0}"#, AckLine.resume(0)), (#"{"resume":40}"#, .resume(40)), (#"{"ack":41}"#, .ack(41)),
        (#" { "ack" : 97 } "#, .ack(97)), ("\t{\t\"ack\"\t:\t5\t}\t", .ack(5)),
        (#"{"ack":9223372036854775807}"#, .ack(UInt64(Int64.max))),
    ] as [(String, AckLine)])
    func accepts(text: String, expected: AckLine) {
        #expect(Self.parse(text) == expected)
        #expect(AckLine.parse(ByteBufferAllocator().buffer(string: text)) == expected)
    }

    @Test(arguments: [
        "", " ", "garbage", "{}", #"{"ack":}"#, #"{"ack":-1}"#, #"{"ack":1.5}"#, #"{"ack":"1"}"#, #"{"ack":1"#, #"{"ack":1}x"#,
        #"{"ack":1,"x":2}"#, #"{"nack":1}"#, #"{"ACK":1}"#, #"["ack",1]"#, #"{"ack":18446744073709551616}"#,
        #"{"resume":99999999999999999999999}"#, #"{"ack" 1}"#, #"{ack:1}"#,
        // Above 2^63 − 1 no sequence can be: such a line would make the agent release or renumber nonsense.
        #"{"ack":18446744073709551615}"#, #"{"resume":9223372036854775808}"#,
        // Not canonical decimals (docs/protocol.md, "Integer ranges").
        #"{"resume":007}"#, #"{"ack":00}"#, #"{"ack":1e3}"#, #"{"ack":+1}"#, #"{"ack":-0}"#,
        "{\"ack\":" + String(repeating: "9", count: 5000) + "}", "{\"resume\":1" + String(repeating: "0", count: 5000) + "}",
        // Response lines the agent does not know: ignored, like the collector's heartbeat replies.
        #"{"heartbeat":1700000000000000000}"#, #"{"heartbeat":0}"#, #"{"ack":1,"heartbeat":2}"#, #"{"mark":5}"#,
    ])
    func rejects(text: String) {
        #expect(Self.parse(text) == nil)
    }

    @Test func writerOutputParses() {
        for value in [0, 1, 41, 1 << 53, UInt64(Int64.max)] {
            for line in [AckLine.resume(value), .ack(value)] {
                var buffer = ByteBufferAllocator().buffer(capacity: 0)
                WireLineWriter.appendAckLine(line, to: &buffer)
                #expect(buffer.readableBytesView.last == UInt8(ascii: "\n"))
                buffer.moveWriterIndex(to: buffer.writerIndex - 1)
                #expect(AckLine.parse(buffer) == line)
            }
        }
    }
}
