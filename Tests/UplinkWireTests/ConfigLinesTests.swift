import NIOCore
import Testing
import UplinkWire

private let revision = "sha256:" + String(repeating: "0123456789abcdef", count: 4)

@Suite("Remote configuration lines")
struct ConfigLinesTests {
    @Test("The config response line and the Uplink-Config header: written, read back, strict")
    func hint() throws {
        let hint = try #require(ConfigHint(revision: revision, generation: 17))
        var buffer = ByteBuffer()
        WireLineWriter.appendConfigLine(hint, to: &buffer)
        #expect(String(buffer: buffer) == #"{"config":{"rev":"\#(revision)","generation":17}}"# + "\n")
        buffer.moveWriterIndex(to: buffer.writerIndex - 1)
        #expect(ConfigHint.parse(buffer) == hint)
        #expect(ConfigHint.parse(ByteBuffer(string: #" { "config" : { "generation" : 17 , "rev" : "\#(revision)" } } "#)) == hint)
        #expect(hint.headerValue == "rev=\(revision), generation=17")
        #expect(ConfigHint(headerValue: "generation=17,rev=\(revision)") == hint)
        for line in [
            #"{"config":{"rev":"sha256:00","generation":1}}"#, #"{"config":{"rev":"\#(revision)"}}"#,
            #"{"config":{"rev":"\#(revision)","generation":-1}}"#, #"{"config":{"rev":"\#(revision)","generation":1.5}}"#,
            #"{"config":{"rev":"\#(revision)","generation":9223372036854775808}}"#,
            #"{"config":{"rev":"\#(revision)","generation":1,"extra":2}}"#,
            #"{"config":{"rev":"\#(revision)","generation":1},"ack":3}"#, #"{"ack":3}"#, #"{"resume":0}"#,
            #"{"config":{"rev":"\#(revision.uppercased())","generation":1}}"#,
        ] {
            #expect(ConfigHint.parse(ByteBuffer(string: line)) == nil, "\(line)")
        }
        for header in ["rev=\(revision)", "rev=\(revision), generation=01", "rev=x, generation=1", "rev=\(revision), generation=1, x=2"] {
            #expect(ConfigHint(headerValue: header) == nil, "\(header)")
        }
    }

    @Test("The config_status line: written, read back by its parser and by the body line parser; malformed ones named")
    func status() throws {
        let status = ConfigStatus(
            desired: revision, effective: nil, lastKnownGood: revision, state: .rolledBack, error: "tail \"app\": denied",
            generation: 3)
        var line: [UInt8] = []
        WireLineWriter.appendConfigStatusLine(status, to: &line)
        #expect(line.last == UInt8(ascii: "\n"))
        line.removeLast()
        #expect(try line.withUnsafeBytes { try ConfigStatus.parse($0) } == status)
        #expect(try line.withUnsafeBytes { try WireLineParser.scan($0) } == .configStatus(status))
        #expect(try line.withUnsafeBytes { try WireLineParser.decode($0) } == .configStatus(status))
        #expect(try ConfigStatus.parse(ByteBuffer(string: #"{"config_status":{"state":"applied"}}"#)) == ConfigStatus(state: .applied))

        let malformed: [(String, String)] = [
            (#"{"config_status":{}}"#, WireDecodingError.Code.missingKey),
            (#"{"config_status":{"state":"done"}}"#, WireDecodingError.Code.invalidValue),
            (#"{"config_status":{"state":"applied","state":"failed"}}"#, WireDecodingError.Code.duplicateKey),
            (#"{"config_status":{"state":"applied","desired":"sha256:00"}}"#, WireDecodingError.Code.invalidValue),
            (#"{"config_status":{"state":"applied","surprise":1}}"#, WireDecodingError.Code.invalidValue),
            (#"{"config_status":{"state":7}}"#, WireDecodingError.Code.wrongType),
        ]
        for (text, code) in malformed {
            #expect(throws: WireDecodingError.self, "\(text)") { try ConfigStatus.parse(ByteBuffer(string: text)) }
            do {
                _ = try ConfigStatus.parse(ByteBuffer(string: text))
            } catch {
                #expect(error.code == code, "\(text): \(error)")
            }
        }
        // Beside a record key it is no config_status line, and no record either.
        let mixed = ByteBuffer(string: #"{"config_status":{"state":"applied"},"seq":1}"#)
        #expect(throws: WireDecodingError.self) { try WireLineParser.scan(mixed) }
    }
}
