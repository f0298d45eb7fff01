import Testing
import UplinkConfig
import UplinkCore

@Suite("YAML parser")
struct ConfigParserTests {
    private func parse(_ text: String, environment: ConfigEnvironment = [:]) -> ConfigDocument {
        ConfigDocument.parse(text, file: "doc.yaml", environment: environment)
    }

    @Test func marksAreOneBased() throws {
        let document = parse("""
            # comment
            a: 1
            b:
              - x
              - "y"
            c: { d: 'e' }
            """)
        #expect(document.issues.isEmpty)
        let root = try #require(document.root)
        #expect(root.mark == ConfigMark(file: "doc.yaml", line: 2, column: 1))
        let entries = try #require(root.entries)
        #expect(entries.map(\.name) == ["a", "b", "c"])
        #expect(entries[0].key.mark.line == 2 && entries[0].key.mark.column == 1)
        #expect(entries[0].value.mark.line == 2 && entries[0].value.mark.column == 4)
        let items = try #require(entries[1].value.items)
        #expect(entries[1].value.mark == ConfigMark(file: "doc.yaml", line: 4, column: 3))
        #expect(items[1].mark == ConfigMark(file: "doc.yaml", line: 5, column: 5))
        #expect(items[1].scalar == ConfigScalar(value: "y", style: .doubleQuoted))
        #expect(items[1].scalar?.isQuoted == true)
        #expect(entries[2].value.mark == ConfigMark(file: "doc.yaml", line: 6, column: 4))
        #expect(entries[2].value["d"]?.mark == ConfigMark(file: "doc.yaml", line: 6, column: 9))
        #expect(entries[2].value["d"]?.scalar?.style == .singleQuoted)
    }

    @Test func columnsCountCharacters() throws {
        let document = parse("é: ü\nkey: \"ü\" # ä\n")
        let root = try #require(document.root)
        #expect(root["é"]?.mark.column == 4)
        #expect(root["key"]?.mark.column == 6)
    }

    @Test func nullsAndQuoting() throws {
        let root = try #require(parse("a:\nb: ~\nc: null\nd: ''\ne: \"null\"\n").root)
        #expect(root["a"]?.isNull == true)
        #expect(root["b"]?.isNull == true)
        #expect(root["c"]?.isNull == true)
        #expect(root["d"]?.isNull == false)
        #expect(root["e"]?.isNull == false)
    }

    @Test func emptyDocumentHasNoRoot() {
        let document = parse("# only a comment\n")
        #expect(document.root == nil)
        #expect(document.issues.isEmpty)
        #expect(parse("").root == nil)
    }

    @Test func syntaxErrorCarriesLibyamlProblemAndMark() {
        let document = parse("a: [1, 2\nb: 3\n")
        #expect(document.root == nil)
        #expect(document.issues.map(\.description) == [
            "doc.yaml:2:2: invalid YAML: did not find expected ',' or ']' (while parsing a flow sequence at line 1, column 4)"
        ])
    }

    @Test func invalidUTF8IsASyntaxIssue() {
        let document = ConfigDocument.parse(bytes: Array("a: b\nc: d".utf8) + [0xFF, 0x0A], file: "doc.yaml", environment: [:])
        #expect(document.root == nil)
        #expect(document.issues.map(\.description) == ["doc.yaml:2:5: invalid YAML: invalid leading UTF-8 octet (byte 0xFF)"])
    }

    @Test func tabIndentationGetsAHint() {
        let document = parse("a:\n\tb: 1\n")
        #expect(document.issues.map(\.description) == [
            "doc.yaml:2:1: invalid YAML: found character that cannot start any token (while scanning for the next token at line 2, column 1) (hint: YAML does not allow tabs for indentation; indent with spaces)"
        ])
    }

    @Test func duplicateKeysAreReportedAtTheSecond() throws {
        let document = parse("a:\n  b: 1\n  c: 2\n  b: 3\n")
        #expect(document.issues.map(\.description) == [
            "doc.yaml:4:3: a.b: duplicate key 'b' (first set at line 2, column 3) (hint: remove one of the two)"
        ])
        #expect(document.root?["a"]?["b"]?.scalar?.value == "1")
    }

    @Test func aliasesAndMergeKeysAreResolved() throws {
        let document = parse("""
            defaults: &defaults
              interval: 2s
              per_core: false
            list: &list [1, 2]
            one:
              <<: *defaults
              per_core: true
            two: *list
            """)
        #expect(document.issues.isEmpty)
        let root = try #require(document.root)
        #expect(root["one"]?["interval"]?.scalar?.value == "2s")
        #expect(root["one"]?["per_core"]?.scalar?.value == "true")
        #expect(root["one"]?.entries?.map(\.name) == ["per_core", "interval"])
        #expect(root["two"]?.items?.count == 2)
        // Issues inside an alias point at the anchored original.
        #expect(root["two"]?.mark == ConfigMark(file: "doc.yaml", line: 4, column: 7))
    }

    @Test func undefinedAliasIsAnIssue() {
        let document = parse("a: *nowhere\n")
        #expect(document.issues.map(\.description) == [
            "doc.yaml:1:4: a: alias '*nowhere' does not refer to an anchor defined before it (hint: define '&nowhere' on a value above this line)"
        ])
    }

    @Test func aliasExpansionIsBounded() {
        var lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        for level in 1...9 {
            let previous = "*a\(level - 1)"
            lines.append("a\(level): &a\(level) [\(Array(repeating: previous, count: 10).joined(separator: ", "))]")
        }
        let document = parse(lines.joined(separator: "\n"))
        #expect(document.root == nil)
        #expect(document.issues.count == 1)
        #expect(document.issues.first?.code == .unsupported)
        #expect(document.issues.first?.message.contains("more than 100000 values") == true)
    }

    @Test func secondDocumentIsRejected() {
        let document = parse("a: 1\n---\nb: 2\n")
        #expect(document.issues.map(\.description) == [
            "doc.yaml:2:1: a configuration file holds one YAML document, but a second one starts here (hint: remove the second document or move it to its own file)"
        ])
    }

    @Test func nonScalarKeysAreRejected() {
        let document = parse("? [a, b]\n: 1\nc: 2\n")
        #expect(document.issues.map(\.description) == ["doc.yaml:1:3: a key must be a plain value, not a list"])
        #expect(document.root?.entries?.map(\.name) == ["c"])
    }

    @Test func substitution() throws {
        let environment: ConfigEnvironment = ["HOST": "collector", "EMPTY": "", "PORT": "4318"]
        let document = parse("""
            a: http://${HOST}:${PORT}/x
            b: ${MISSING:-fallback}
            c: ${EMPTY:-used when empty}
            d: "$${HOST} and $$ and $HOST"
            e: ${EMPTY}
            ${HOST}: key is not substituted
            f: '${HOST}'
            """, environment: environment)
        #expect(document.issues.isEmpty)
        let root = try #require(document.root)
        #expect(root["a"]?.scalar?.value == "http://collector:4318/x")
        #expect(root["a"]?.scalar?.raw == "http://${HOST}:${PORT}/x")
        #expect(root["b"]?.scalar?.value == "fallback")
        #expect(root["c"]?.scalar?.value == "used when empty")
        #expect(root["d"]?.scalar?.value == "${HOST} and $$ and $HOST")
        #expect(root["e"]?.isNull == true)
        #expect(root["${HOST}"]?.scalar?.value == "key is not substituted")
        #expect(root["f"]?.scalar?.value == "collector")
    }

    @Test func substitutionProblems() {
        let document = parse("""
            a: ${UNSET}
            list:
              - ok
              - x${1BAD}y
              - ${OPEN
            """)
        #expect(document.issues.map(\.description) == [
            "doc.yaml:1:4: a: environment variable 'UNSET' is not set (hint: set it, or give a default: '${UNSET:-default}')",
            "doc.yaml:4:5: list[1]: invalid environment variable reference '${1BAD}' (hint: names are letters, digits and '_', not starting with a digit; write '$${' for a literal '${')",
            "doc.yaml:5:5: list[2]: unterminated '${' in '${OPEN' (hint: close the reference with '}', or write '$${' for a literal '${')",
        ])
    }

    @Test func processEnvironmentIsTheDefault() throws {
        let document = ConfigDocument.parse("a: ${PATH}\n", file: "doc.yaml")
        #expect(document.issues.isEmpty)
        #expect(try #require(document.root?["a"]?.scalar?.value).isEmpty == false)
    }

    @Test func unreadableConfigurationFile() {
        let document = ConfigDocument.load(path: fixture("does-not-exist.yaml"), environment: [:])
        #expect(document.issues.map(\.description) == [
            "\(fixture("does-not-exist.yaml")): cannot read the configuration file: No such file or directory"
        ])
    }
}
