import Testing
import UplinkConfig
import UplinkCore

/// The generic decoder, independent of uplink's own schema.
@Suite("Config decoder")
struct ConfigDecoderTests {
    private func decoder(_ yaml: String) -> ConfigDecoder {
        ConfigDecoder(document: ConfigDocument.parse(yaml, file: "d.yaml", environment: [:]))
    }

    @Test func typedReaders() throws {
        let decoder = decoder("""
            s: text
            b: TRUE
            i: 1_000
            n: -3
            d: 2.5e3
            t: 90s
            z: 16MiB
            u: https://h.example/x
            e: two
            l: [1, 2, 3]
            a: "[::]:0"
            """)
        let root = try #require(decoder.rootMapping(allowedKeys: nil))
        #expect(root.string("s") == "text")
        #expect(root.bool("b") == true)
        #expect(root.int("i") == 1000)
        #expect(root.int("n", .between(-5, 5)) == -3)
        #expect(root.double("d") == 2500)
        #expect(root.duration("t") == .seconds(90))
        #expect(root.size("z") == 16 << 20)
        #expect(root.url("u") == "https://h.example/x")
        #expect(root.choice("e", allowed: ["one", "two"]) == "two")
        #expect(root.list("l") { decoder.int($0.node, at: $0.path) } == [1, 2, 3])
        #expect(root.hostPort("a") == ConfigHostPort(host: "::", port: 0))
        #expect(root.string("absent") == nil)
        #expect(decoder.issues.isEmpty)
    }

    @Test func readersReportWithPaths() throws {
        let decoder = decoder("""
            outer:
              list:
                - { port: 99999999999999999999 }
                - { port: x }
            """)
        let root = try #require(decoder.rootMapping(allowedKeys: ["outer"]))
        let outer = try #require(root.mapping("outer", allowedKeys: ["list"]))
        let ports = outer.list("list") { element in
            decoder.mapping(element.node, at: element.path, allowedKeys: ["port"])?.int("port")
        }
        #expect(ports == [])
        #expect(decoder.issues.map(\.description) == [
            "d.yaml:3:15: outer.list[0].port: '99999999999999999999' is too large for an integer",
            "d.yaml:4:15: outer.list[1].port: expected an integer, got 'x'",
        ])
    }

    @Test func suggestions() {
        #expect(ConfigSuggestions.closest(to: "intervall", among: ["interval", "per_core"]) == "interval")
        #expect(ConfigSuggestions.closest(to: "perCore", among: ["interval", "per_core"]) == "per_core")
        #expect(ConfigSuggestions.closest(to: "tpye", among: ["name", "type"]) == "type")
        #expect(ConfigSuggestions.closest(to: "colour", among: ["max_bytes", "overflow"]) == nil)
        #expect(ConfigSuggestions.closest(to: "x", among: ["y"]) == nil)
        #expect(ConfigSuggestions.hint(for: "sorces", among: ["agent", "sources"], listing: "allowed keys")
            == "did you mean 'sources'? allowed keys: agent, sources")
    }

    @Test func resultHoldsNoValueWhenThereAreIssues() {
        let issue = ConfigIssue(file: "f", line: 1, column: 1, keyPath: "", code: .syntax, message: "m")
        let result = ConfigResult(value: 1, issues: [issue])
        #expect(result.value == nil)
        #expect(throws: ConfigIssues([issue])) { try result.get() }
        #expect(ConfigIssues([issue, issue]).description == "f:1:1: m\nf:1:1: m")
    }
}
