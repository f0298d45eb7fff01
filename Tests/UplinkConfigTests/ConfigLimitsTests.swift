import Testing
import UplinkAgent
import UplinkConfig
import UplinkCore

/// Sizes, durations and counts have upper bounds that fit the machine, and every issue is exactly one line
/// whatever the value holds (once `buffer.max_bytes: 1TiB` aborted `uplink validate`; control characters
/// were printed raw).
@Suite("Configuration limits")
struct ConfigLimitsTests {
    static let ceiling = ConfigValueParsing.format(size: ConfigLimits.sizeCeiling)

    /// Exactly one issue, on one line, free of control characters.
    static func singleIssue(_ yaml: String, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        let found = issues(yaml)
        #expect(found.count == 1, "\(found)", sourceLocation: sourceLocation)
        for line in found {
            #expect(
                !line.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || $0 == "\u{2028}" },
                "\(line.debugDescription)", sourceLocation: sourceLocation)
        }
        return found.first
    }

    @Test func theCeilingFitsTheMachine() {
        #expect(ConfigLimits.sizeCeiling <= ConfigLimits.maximumSize)
        #expect(ConfigLimits.sizeCeiling >= 64 << 20)
        if let memory = ConfigLimits.physicalMemory { #expect(ConfigLimits.sizeCeiling <= memory) }
    }

    @Test(arguments: ["1TiB", "16TB", "17GiB", "9223372036854775807", "8EiB"])
    func aHugeBufferIsAnIssueNotAnAbort(size: String) {
        let line = Self.singleIssue("buffer: { max_bytes: \(size) }\n" + minimalAgent)
        if size == "8EiB" {
            #expect(line?.hasPrefix("test.yaml:1:22: buffer.max_bytes: invalid size '8EiB': unknown unit 'EiB'") == true, "\(line ?? "")")
        } else if size == "9223372036854775807" || size.hasSuffix("TiB") || size.hasSuffix("TB") || size == "17GiB" {
            #expect(
                line == "test.yaml:1:22: buffer.max_bytes: '\(size)' is too large: the maximum is \(Self.ceiling) "
                    + "(hint: \(ConfigLimits.sizeHintForTests))")
        }
    }

    @Test func theCeilingItselfIsAccepted() {
        let result = decode("buffer: { max_bytes: \(Self.ceiling) }\n" + minimalAgent)
        #expect(result.issues.isEmpty, "\(result.issues)")
        #expect(result.value?.buffer.maxBytes == ConfigLimits.sizeCeiling)
    }

    @Test func everySizeKeyHasTheCeiling() {
        let yaml = """
            uplink:
              url: http://collector.test:4318
              stream_buffer: 1TiB
            sources:
              - { name: g, type: generator, record_bytes: 1TiB, count: 9007199254740993 }
            collector:
              max_line_bytes: 1TiB
            """
        let found = issues(yaml)
        #expect(found.count == 4, "\(found)")
        let hint = " (hint: \(ConfigLimits.sizeHintForTests))"
        #expect(found == [
            "test.yaml:3:18: uplink.stream_buffer: '1TiB' is too large: the maximum is \(Self.ceiling)" + hint,
            "test.yaml:5:47: sources[0].record_bytes: '1TiB' is out of range: it must be between 0B and 1MiB",
            "test.yaml:5:60: sources[0].count: '9007199254740993' is too large: the maximum is 9007199254740992 "
                + "(hint: no integer setting may exceed 2^53 (9007199254740992))",
            "test.yaml:7:19: collector.max_line_bytes: '1TiB' is too large: the maximum is \(Self.ceiling)" + hint,
        ])
    }

    @Test func durationsHaveACeiling() {
        let line = Self.singleIssue("""
            uplink:
              url: http://collector.test:4318
              drain_timeout: 100000h
            sources: [{ name: cpu, type: cpu }]
            """)
        #expect(line == "test.yaml:3:18: uplink.drain_timeout: '100000h' is too large: the maximum is 720h (hint: no duration may exceed 720h)")
        #expect(issues(minimalAgent + "\n    interval: 720h\n").isEmpty)
    }

    /// A key's own bound, when tighter, is the one reported (and without the machine's hint).
    @Test func aTighterBoundOfTheKeyWins() {
        let line = Self.singleIssue("""
            uplink: { url: http://collector.test:4318 }
            sources: [{ name: t, type: tail, paths: [/var/log/x.log], max_line_bytes: 99TiB }]
            """)
        #expect(line == "test.yaml:2:75: sources[0].max_line_bytes: '99TiB' is out of range: it must be between 1B and 16MiB")
    }

    // MARK: Control characters

    @Test(arguments: [
        ("\\n", "\\n"), ("\\r", "\\r"), ("\\t", "\\t"), ("\\e", "\\u001b"), ("\\a", "\\u0007"), ("\\0", "\\u0000"),
        ("\\x7f", "\\u007f"), ("\\N", "\\u0085"), ("\\L", "\\u2028"), ("\\P", "\\u2029"), ("\\x9b", "\\u009b"),
    ])
    func controlCharactersInAValueAreEscaped(yamlEscape: String, shown: String) {
        let line = Self.singleIssue("""
            uplink: { url: http://collector.test:4318 }
            sources: [{ name: cpu, type: cpu, interval: "x\(yamlEscape)" }]
            """)
        #expect(line?.hasPrefix("test.yaml:2:45: sources[0].interval: invalid duration 'x\(shown)'") == true, "\(line ?? "")")
    }

    @Test func controlCharactersInKeysAndEnvironmentValuesAreEscaped() {
        let line = Self.singleIssue("\"bad\\nkey\\e[2J\": 1\n" + minimalAgent)
        #expect(line?.hasPrefix(#"test.yaml:1:1: bad\nkey\u001b[2J: unknown key 'bad\nkey\u001b[2J'"#) == true, "\(line ?? "")")
        let fromEnvironment = issues(
            "uplink: { url: \"${TARGET}\" }\nsources: [{ name: cpu, type: cpu }]\n", environment: ["TARGET": "http://a\n\u{1B}]0;x\u{07}"])
        #expect(fromEnvironment.count == 1)
        #expect(fromEnvironment.allSatisfy { !$0.contains("\n") && !$0.contains("\u{1B}") && !$0.contains("\u{07}") })
        #expect(fromEnvironment.first?.contains(#"http://a\n\u001b]0;x\u0007"#) == true, "\(fromEnvironment)")
    }

    @Test func theEscapingFunction() {
        #expect(ConfigIssue.escapingControlCharacters("plain: é ✓ \\ 'q'") == "plain: é ✓ \\ 'q'")
        #expect(ConfigIssue.escapingControlCharacters("a\nb\r\tc\u{0}\u{1B}\u{7F}\u{80}\u{9F}\u{A0}") == #"a\nb\r\tc\u0000\u001b\u007f\u0080\u009f"# + "\u{A0}")
        let issue = ConfigIssue(
            file: "x\n.yaml", line: 1, column: 2, keyPath: "k\u{1B}", code: .invalidValue, message: "m\u{7}", hint: "h\r")
        #expect(issue.description == #"x\n.yaml:1:2: k\u001b: m\u0007 (hint: h\r)"#)
    }
}

extension ConfigLimits {
    /// The hint of a size above the ceiling, as the decoder words it.
    static var sizeHintForTests: String {
        let memory = physicalMemory.map { "; this machine has \($0 >> 20)MiB" } ?? ""
        return "no size may exceed the physical memory or 16GiB\(memory)"
    }
}
