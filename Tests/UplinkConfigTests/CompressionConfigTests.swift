import Testing
import UplinkAgent
import UplinkCollector
import UplinkConfig
import UplinkTransport
import UplinkWire

/// `uplink.compression` and `collector.accept_encodings`: defaults, every value, and issues at file:line:col.
@Suite("uplink.compression and collector.accept_encodings")
struct CompressionConfigTests {
    @Test func compressionDefaultsToZstd() throws {
        let file = try decode(minimalAgent).get()
        #expect(file.uplink.compression == .zstd)
        #expect(file.agentConfiguration(embedded: nil).uplink.compression == .zstd)
        #expect(UplinkConfiguration(url: "http://x", agentID: "a").compression == .zstd)
    }

    @Test("Every value reaches the uplink", arguments: WireCompression.allCases)
    func everyCompression(_ value: WireCompression) throws {
        let file = try decode(minimalAgent.replacingOccurrences(
            of: "url: http://collector.test:4318", with: "url: http://collector.test:4318\n  compression: \(value.rawValue)")).get()
        #expect(file.uplink.compression == value)
        #expect(file.agentConfiguration(embedded: nil).uplink.compression == value)
    }

    @Test func badCompressionNamesFileLineColumnAndKey() {
        let found = issues("""
            uplink:
              url: http://collector.test:4318
              compression: brotli
            sources: [{ name: cpu, type: cpu }]
            """)
        #expect(found.count == 1)
        #expect(found.first?.hasPrefix("test.yaml:3:16: uplink.compression: ") == true, "\(found)")
        #expect(found.first?.contains("zstd") == true, "\(found)")
        let mistyped = issues("""
            uplink:
              url: http://collector.test:4318
              compression: [zstd]
            sources: [{ name: cpu, type: cpu }]
            """)
        #expect(mistyped.count == 1)
        #expect(mistyped.first?.hasPrefix("test.yaml:3:16: uplink.compression: ") == true, "\(mistyped)")
    }

    @Test func acceptEncodingsDefaultsToBoth() throws {
        let collector = try #require(decodeWithCollector("collector:\n").collector)
        #expect(collector.acceptEncodings == [.zstd, .gzip])
    }

    @Test("Every list is kept as written", arguments: [
        ("[zstd, gzip]", [WireCompression.zstd, .gzip]), ("[gzip]", [.gzip]), ("[zstd]", [.zstd]), ("[]", []),
        ("[gzip, zstd]", [.gzip, .zstd]),
    ])
    func everyList(_ text: String, _ expected: [WireCompression]) throws {
        let collector = try #require(decodeWithCollector("collector:\n  accept_encodings: \(text)\n").collector)
        #expect(collector.acceptEncodings == Set(expected))
    }

    @Test func badAcceptEncodingsNameFileLineColumnAndItem() {
        #expect(issues("collector:\n  accept_encodings: [zstd, br]\n") == [
            "test.yaml:2:28: collector.accept_encodings[1]: 'br' is not a compressed encoding (hint: list any of: zstd, gzip)"
        ])
        #expect(issues("collector:\n  accept_encodings: [none]\n") == [
            "test.yaml:2:22: collector.accept_encodings[0]: 'none' is not a compressed encoding (hint: an uncompressed body is always accepted; list only zstd and gzip)"
        ])
        #expect(issues("collector:\n  accept_encodings: [gzip, gzip]\n") == [
            "test.yaml:2:28: collector.accept_encodings[1]: 'gzip' is listed twice"
        ])
        let notAList = issues("collector:\n  accept_encodings: zstd\n")
        #expect(notAList.count == 1)
        #expect(notAList.first?.hasPrefix("test.yaml:2:21: collector.accept_encodings: ") == true, "\(notAList)")
    }
}
