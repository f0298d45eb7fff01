import Testing
import UplinkConfig
import UplinkCore
import UplinkTestSupport

/// Random well-formed documents, written out in block and flow style while recording where each node starts, must
/// parse back to exactly the tree that was generated, marks included.
@Suite("YAML parser properties")
struct ConfigParserPropertyTests {
    @Test(.computeBound) func randomDocumentsParseWithCorrectMarks() throws {
        var generator = SplitMix64(seed: 0x5EED_0F_C0FF_EE)
        for iteration in 0..<400 {
            var writer = DocumentWriter(generator: generator)
            let expected = writer.writeDocument()
            generator = writer.generator
            let text = writer.text
            let document = ConfigDocument.parse(text, file: "random.yaml", environment: [:])
            #expect(document.issues.isEmpty, "document \(iteration):\n\(text)")
            #expect(document.root == expected, "document \(iteration):\n\(text)")
            if document.root != expected { break }
        }
    }
}

/// Generates a random tree and writes it as YAML, building the expected `ConfigNode` (with marks) as it goes.
private struct DocumentWriter {
    var generator: SplitMix64
    private var lines: [String] = []
    private var current = ""

    init(generator: SplitMix64) {
        self.generator = generator
    }

    var text: String { (lines + [current]).joined(separator: "\n") + "\n" }

    private var mark: ConfigMark {
        ConfigMark(file: "random.yaml", line: lines.count + 1, column: current.unicodeScalars.count + 1)
    }

    private mutating func newLine(indent: Int) {
        lines.append(current)
        current = String(repeating: " ", count: indent)
    }

    private mutating func chance(_ percent: Int) -> Bool {
        Int.random(in: 0..<100, using: &generator) < percent
    }

    private mutating func count(_ range: ClosedRange<Int>) -> Int {
        Int.random(in: range, using: &generator)
    }

    mutating func writeDocument() -> ConfigNode {
        if chance(30) {
            current = "# a comment line"
            newLine(indent: 0)
        }
        return writeMapping(indent: 0, inline: true, depth: 0, minimum: 1)
    }

    // MARK: Block collections

    private mutating func writeMapping(indent: Int, inline: Bool, depth: Int, minimum: Int = 1) -> ConfigNode {
        let start = inline ? mark : nil
        var entries: [ConfigEntry] = []
        var keys: Set<String> = []
        var mapMark: ConfigMark?
        for index in 0..<count(minimum...4) {
            if index > 0 || !inline { newLine(indent: indent) }
            var key = word()
            while keys.contains(key) { key += "k" }
            keys.insert(key)
            let keyMark = mark
            if mapMark == nil { mapMark = start ?? keyMark }
            let keyNode = writeScalar(key, keyPosition: true)
            current += ":"
            let value = writeValue(indent: indent, depth: depth + 1, afterKey: true)
            entries.append(ConfigEntry(key: ConfigNode(.scalar(keyNode), mark: keyMark), value: value))
        }
        return ConfigNode(.mapping(entries), mark: mapMark ?? mark)
    }

    private mutating func writeSequence(indent: Int, inline: Bool, depth: Int) -> ConfigNode {
        var items: [ConfigNode] = []
        var sequenceMark: ConfigMark?
        for index in 0..<count(1...4) {
            if index > 0 || !inline { newLine(indent: indent) }
            if sequenceMark == nil { sequenceMark = mark }
            current += "-"
            items.append(writeValue(indent: indent, depth: depth + 1, afterKey: false))
        }
        return ConfigNode(.sequence(items), mark: sequenceMark ?? mark)
    }

    /// Writes a value after `key:` or `-`.
    private mutating func writeValue(indent: Int, depth: Int, afterKey: Bool) -> ConfigNode {
        let choice = depth >= 4 ? 0 : count(0...9)
        switch choice {
        case 0...3:
            current += " "
            let valueMark = mark
            return ConfigNode(.scalar(writeScalar(word(), keyPosition: false)), mark: valueMark)
        case 4:
            current += " "
            return writeFlow()
        case 5...6:
            if afterKey {
                return writeMapping(indent: indent + 2, inline: false, depth: depth)
            }
            current += " "
            return writeMapping(indent: indent + 2, inline: true, depth: depth)
        default:
            if afterKey {
                // Block sequences under a key may be indented or not ("indentless").
                return writeSequence(indent: chance(50) ? indent : indent + 2, inline: false, depth: depth)
            }
            current += " "
            return writeSequence(indent: indent + 2, inline: true, depth: depth)
        }
    }

    // MARK: Flow collections of scalars

    private mutating func writeFlow() -> ConfigNode {
        let flowMark = mark
        if chance(50) {
            current += "["
            var items: [ConfigNode] = []
            for index in 0..<count(0...3) {
                if index > 0 { current += ", " }
                let itemMark = mark
                items.append(ConfigNode(.scalar(writeScalar(word(), keyPosition: false)), mark: itemMark))
            }
            current += "]"
            return ConfigNode(.sequence(items), mark: flowMark)
        }
        current += "{"
        var entries: [ConfigEntry] = []
        var keys: Set<String> = []
        for index in 0..<count(0...3) {
            current += index > 0 ? ", " : " "
            var key = word()
            while keys.contains(key) { key += "k" }
            keys.insert(key)
            let keyMark = mark
            let keyScalar = writeScalar(key, keyPosition: true)
            current += ": "
            let valueMark = mark
            let value = writeScalar(word(), keyPosition: false)
            entries.append(ConfigEntry(
                key: ConfigNode(.scalar(keyScalar), mark: keyMark), value: ConfigNode(.scalar(value), mark: valueMark)))
        }
        current += entries.isEmpty ? "}" : " }"
        return ConfigNode(.mapping(entries), mark: flowMark)
    }

    // MARK: Scalars

    /// Letters and digits, some of them outside ASCII; never a YAML indicator or a null spelling.
    private mutating func word() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789éüß中")
        var text = "w"
        for _ in 0..<count(0...8) { text.append(alphabet[count(0...(alphabet.count - 1))]) }
        return text
    }

    /// Text that needs quoting: spaces, colons, hashes, quotes, backslashes, tabs and non-ASCII.
    private mutating func awkwardText() -> String {
        let pieces = ["a", "b", " ", ": ", " #", "'", "\"", "\\", "\t", "é", "中", "-", "{", "]", ","]
        var text = ""
        for _ in 0..<count(0...6) { text += pieces[count(0...(pieces.count - 1))] }
        return text
    }

    private mutating func writeScalar(_ plain: String, keyPosition: Bool) -> ConfigScalar {
        switch count(0...9) {
        case 0...5:
            current += plain
            return ConfigScalar(value: plain, raw: plain, style: .plain)
        case 6...7:
            // Keys stay unique: a quoted key is the quoted word.
            let value = keyPosition ? plain : awkwardText()
            var escaped = ""
            for character in value {
                switch character {
                case "\"": escaped += "\\\""
                case "\\": escaped += "\\\\"
                case "\t": escaped += "\\t"
                default: escaped.append(character)
                }
            }
            current += "\"" + escaped + "\""
            return ConfigScalar(value: value, raw: value, style: .doubleQuoted)
        default:
            let value = keyPosition ? plain : awkwardText().filter { $0 != "\t" }
            current += "'" + value.replacing("'", with: "''") + "'"
            return ConfigScalar(value: value, raw: value, style: .singleQuoted)
        }
    }
}
