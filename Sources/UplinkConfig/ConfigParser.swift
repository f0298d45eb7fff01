import CYAML
import UplinkCore

/// Builds a `ConfigNode` tree from libyaml's event stream, collecting issues on the way.
///
/// libyaml marks are 0-based (line and column, the column counted in characters); every mark here is 1-based.
struct TreeBuilder {
    /// A node finished so far, with how many nodes it contains (for the alias expansion budget).
    private struct Built {
        var node: ConfigNode
        var count: Int
    }

    /// A mapping or sequence whose end event has not come yet.
    private struct Frame {
        enum Kind { case mapping, sequence }
        var kind: Kind
        var mark: ConfigMark
        var path: ConfigPath
        var anchor: String?
        var count = 1
        var items: [ConfigNode] = []
        var entries: [ConfigEntry] = []
        /// Mapping: the key whose value comes next.
        var pendingKey: ConfigNode?
        /// Mapping: the key was unusable (not a scalar); drop its value.
        var skipValue = false
        /// Mapping: where each key was first set.
        var keyMarks: [String: ConfigMark] = [:]
        /// Mapping: the values of its `<<` merge keys, applied when the mapping ends.
        var merges: [ConfigNode] = []
    }

    /// Deepest nesting of mappings and lists accepted.
    static let maximumDepth = 256

    let file: String
    let source: [UInt8]
    let options: ConfigParseOptions
    private(set) var root: ConfigNode?
    private(set) var issues: [ConfigIssue] = []
    private var stack: [Frame] = []
    private var anchors: [String: Built] = [:]
    private var totalNodes = 0
    /// Without an environment: where the scalars reported for holding `${` start and end (their other `${` are not
    /// reported again).
    private var refusedScalars: [(start: ConfigMark, end: ConfigMark)] = []
    private var documents = 0

    init(file: String, source: [UInt8], options: ConfigParseOptions) {
        self.file = file
        self.source = source
        self.options = options
    }

    mutating func run() {
        parse()
        if options.environment == nil { reportUncoveredReferences() }
    }

    private mutating func parse() {
        let bytes = source
        guard !bytes.isEmpty else { return }
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) != 0 else {
            report(.syntax, at: ConfigMark(file: file, line: 1, column: 1), path: .root, "libyaml could not be initialized")
            return
        }
        defer { yaml_parser_delete(&parser) }
        bytes.withUnsafeBufferPointer { buffer in
            // libyaml reads from this pointer while parsing, so the whole event loop runs inside this closure.
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var event = yaml_event_t()
            while true {
                guard yaml_parser_parse(&parser, &event) != 0 else {
                    reportSyntaxError(parser)
                    root = nil
                    return
                }
                let finished = handle(event)
                yaml_event_delete(&event)
                if finished { return }
            }
        }
    }

    // MARK: - Events

    /// Handles one event; returns true when parsing is over.
    private mutating func handle(_ event: yaml_event_t) -> Bool {
        let mark = self.mark(event.start_mark)
        switch event.type {
        case YAML_STREAM_END_EVENT:
            return true
        case YAML_DOCUMENT_START_EVENT:
            documents += 1
            if documents > 1 {
                report(
                    .unsupported, at: mark, path: .root,
                    "a configuration file holds one YAML document, but a second one starts here",
                    hint: "remove the second document or move it to its own file")
                return true
            }
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            let text = String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self)
            let style: ConfigScalar.Style =
                switch scalar.style {
                case YAML_SINGLE_QUOTED_SCALAR_STYLE: .singleQuoted
                case YAML_DOUBLE_QUOTED_SCALAR_STYLE: .doubleQuoted
                case YAML_LITERAL_SCALAR_STYLE: .literal
                case YAML_FOLDED_SCALAR_STYLE: .folded
                default: .plain
                }
            var value = ConfigScalar(value: text, raw: text, style: style)
            if options.environment == nil, text.utf8.contains(UInt8(ascii: "$")), text.contains("${") {
                // An untrusted document: no substitution, and a reference is refused rather than kept as text.
                report(
                    .notAllowed, at: mark, path: nextPath,
                    "'${' is not allowed here: this document gets no environment variable expansion",
                    hint: "write the value itself; only the local configuration file expands ${VAR}")
                value.substitutionFailed = true
                refusedScalars.append((mark, self.mark(event.end_mark)))
            } else if let environment = options.environment, !isKeyPosition {
                let (substituted, problems) = EnvironmentSubstitution.substitute(text, environment: environment)
                value.value = substituted
                value.substitutionFailed = !problems.isEmpty
                let path = nextPath
                for problem in problems {
                    report(problem.code, at: mark, path: path, problem.message, hint: problem.hint)
                }
            }
            guard countNodes(1, at: mark) else { return true }
            complete(Built(node: ConfigNode(.scalar(value), mark: mark), count: 1), anchor: anchor(scalar.anchor, at: mark))
        case YAML_ALIAS_EVENT:
            let name = string(event.data.alias.anchor) ?? ""
            guard options.allowsAliases else {
                report(
                    .notAllowed, at: mark, path: nextPath, "YAML aliases ('*\(name)') are not allowed in this document",
                    hint: "write every value out in full")
                complete(Built(node: ConfigNode(.scalar(ConfigScalar(value: "", substitutionFailed: true)), mark: mark), count: 1), anchor: nil)
                return false
            }
            guard let built = anchors[name] else {
                report(
                    .syntax, at: mark, path: nextPath, "alias '*\(name)' does not refer to an anchor defined before it",
                    hint: "define '&\(name)' on a value above this line")
                complete(Built(node: ConfigNode(.scalar(ConfigScalar(value: "")), mark: mark), count: 1), anchor: nil)
                return false
            }
            guard countNodes(built.count, at: mark) else { return true }
            complete(built, anchor: nil)
        case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
            guard stack.count < Self.maximumDepth else {
                report(.unsupported, at: mark, path: nextPath, "mappings and lists nest deeper than \(Self.maximumDepth) levels")
                return true
            }
            guard countNodes(1, at: mark) else { return true }
            let isMapping = event.type == YAML_MAPPING_START_EVENT
            let anchor = isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor
            let path = nextPath
            stack.append(Frame(kind: isMapping ? .mapping : .sequence, mark: mark, path: path, anchor: self.anchor(anchor, at: mark, path: path)))
        case YAML_SEQUENCE_END_EVENT:
            let frame = stack.removeLast()
            complete(Built(node: ConfigNode(.sequence(frame.items), mark: frame.mark), count: frame.count), anchor: frame.anchor)
        case YAML_MAPPING_END_EVENT:
            var frame = stack.removeLast()
            applyMerges(&frame)
            complete(Built(node: ConfigNode(.mapping(frame.entries), mark: frame.mark), count: frame.count), anchor: frame.anchor)
        default:
            break
        }
        return false
    }

    /// Whether the next node is a mapping key.
    private var isKeyPosition: Bool {
        guard let top = stack.last, top.kind == .mapping else { return false }
        return top.pendingKey == nil && !top.skipValue
    }

    /// The path of the next node: a mapping's value gets its key appended, a list item its position. A key gets the
    /// mapping's own path.
    private var nextPath: ConfigPath {
        guard let top = stack.last else { return .root }
        switch top.kind {
        case .sequence:
            return top.path.appending(index: top.items.count)
        case .mapping:
            if let key = top.pendingKey { return top.path.appending(key.scalar?.value ?? "?") }
            return top.path
        }
    }

    /// Adds `count` nodes to the expansion budget; false (with an issue) when the budget is exhausted.
    private mutating func countNodes(_ count: Int, at mark: ConfigMark) -> Bool {
        totalNodes += count
        guard totalNodes > ConfigDocument.maximumNodes else { return true }
        report(
            .unsupported, at: mark, path: nextPath,
            "the document expands to more than \(ConfigDocument.maximumNodes) values (aliases count with what they copy)")
        root = nil
        return false
    }

    /// Attaches a finished node to its parent (or makes it the root) and records its anchor.
    private mutating func complete(_ built: Built, anchor: String?) {
        if let anchor { anchors[anchor] = built }
        guard !stack.isEmpty else {
            root = built.node
            return
        }
        let index = stack.count - 1
        switch stack[index].kind {
        case .sequence:
            stack[index].items.append(built.node)
            stack[index].count += built.count
        case .mapping:
            if stack[index].skipValue {
                stack[index].skipValue = false
            } else if let key = stack[index].pendingKey {
                var frame = stack.removeLast()
                frame.pendingKey = nil
                addEntry(key: key, value: built, to: &frame)
                stack.append(frame)
            } else if built.node.scalar != nil {
                stack[index].pendingKey = built.node
            } else {
                report(
                    .unsupported, at: built.node.mark, path: stack[index].path,
                    "a key must be a plain value, not \(built.node.summary)")
                stack[index].skipValue = true
            }
        }
    }

    private mutating func addEntry(key: ConfigNode, value: Built, to frame: inout Frame) {
        let scalar = key.scalar ?? ConfigScalar(value: "")
        if scalar.value == "<<" && scalar.style == .plain {
            guard options.allowsAliases else {
                report(
                    .notAllowed, at: key.mark, path: frame.path.appending("<<"),
                    "YAML merge keys ('<<') are not allowed in this document", hint: "write every key out in full")
                return
            }
            frame.merges.append(value.node)
            frame.count += value.count
            return
        }
        if let first = frame.keyMarks[scalar.value] {
            report(
                .duplicateKey, at: key.mark, path: frame.path.appending(scalar.value),
                "duplicate key '\(scalar.value)' (first set at line \(first.line), column \(first.column))",
                hint: "remove one of the two")
            return
        }
        frame.keyMarks[scalar.value] = key.mark
        frame.entries.append(ConfigEntry(key: key, value: value.node))
        frame.count += value.count + 1
    }

    /// Adds the keys of the mapping's `<<` merge values that it does not set itself; the first merge wins.
    private mutating func applyMerges(_ frame: inout Frame) {
        guard !frame.merges.isEmpty else { return }
        var seen = Set(frame.keyMarks.keys)
        for merge in frame.merges {
            let sources: [ConfigNode]
            switch merge.content {
            case .mapping: sources = [merge]
            case .sequence(let items): sources = items
            case .scalar: sources = [merge]
            }
            for source in sources {
                guard let entries = source.entries else {
                    report(
                        .wrongType, at: source.mark, path: frame.path.appending("<<"),
                        "a merge key '<<' takes a mapping or a list of mappings, not \(source.summary)")
                    continue
                }
                for entry in entries where !seen.contains(entry.name) {
                    seen.insert(entry.name)
                    frame.entries.append(entry)
                }
            }
        }
    }

    /// Without an environment, a `${` is refused anywhere, comments included: each one outside a scalar already
    /// reported is reported where it is.
    private mutating func reportUncoveredReferences() {
        var index = 0
        while index + 1 < source.count {
            defer { index += 1 }
            guard source[index] == UInt8(ascii: "$"), source[index + 1] == UInt8(ascii: "{") else { continue }
            let mark = markForByteOffset(index)
            let covered = refusedScalars.contains { range in
                (range.start.line, range.start.column) <= (mark.line, mark.column)
                    && (mark.line, mark.column) < (range.end.line, range.end.column)
            }
            if covered { continue }
            report(
                .notAllowed, at: mark, path: .root, "'${' is not allowed anywhere in this document, comments included",
                hint: "this document gets no environment variable expansion")
        }
    }

    // MARK: - Marks and issues

    private func mark(_ mark: yaml_mark_t) -> ConfigMark {
        ConfigMark(file: file, line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }

    private func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    /// The anchor name of a node, or nil; an anchor in a document that takes no aliases is reported (and dropped).
    private mutating func anchor(
        _ pointer: UnsafeMutablePointer<yaml_char_t>?, at mark: ConfigMark, path: ConfigPath? = nil
    ) -> String? {
        guard let name = string(pointer) else { return nil }
        guard options.allowsAliases else {
            report(
                .notAllowed, at: mark, path: path ?? nextPath, "YAML anchors ('&\(name)') are not allowed in this document",
                hint: "write every value out in full")
            return nil
        }
        return name
    }

    private mutating func report(
        _ code: ConfigIssue.Code, at mark: ConfigMark, path: ConfigPath, _ message: String, hint: String? = nil
    ) {
        issues.append(ConfigIssue(
            file: file, line: mark.line, column: mark.column, keyPath: path.description, code: code,
            message: message, hint: hint))
    }

    private mutating func reportSyntaxError(_ parser: yaml_parser_t) {
        let problem = parser.problem.map { String(cString: $0) } ?? "unknown error"
        switch parser.error {
        case YAML_READER_ERROR:
            var message = "invalid YAML: \(problem)"
            if parser.problem_value != -1 {
                let hex = String(UInt32(truncatingIfNeeded: parser.problem_value), radix: 16, uppercase: true)
                message += " (byte 0x\(hex.count < 2 ? "0" + hex : hex))"
            }
            report(.syntax, at: markForByteOffset(Int(parser.problem_offset)), path: .root, message)
        case YAML_MEMORY_ERROR:
            report(.syntax, at: ConfigMark(file: file, line: 1, column: 1), path: .root, "libyaml ran out of memory")
        default:
            let problemMark = mark(parser.problem_mark)
            var message = "invalid YAML: \(problem)"
            if let context = parser.context.map({ String(cString: $0) }) {
                let contextMark = mark(parser.context_mark)
                message += " (\(context) at line \(contextMark.line), column \(contextMark.column))"
            }
            report(.syntax, at: problemMark, path: .root, message, hint: syntaxHint(problem: problem, at: problemMark))
        }
    }

    /// A hint for the syntax errors people make most: tabs and unquoted `: ` in values.
    private func syntaxHint(problem: String, at mark: ConfigMark) -> String? {
        let line = lineText(mark.line)
        let indentation = line.unicodeScalars.prefix { $0 == " " || $0 == "\t" }
        let atMark = line.unicodeScalars.dropFirst(mark.column - 1).first
        if indentation.contains("\t") || atMark == "\t" {
            return "YAML does not allow tabs for indentation; indent with spaces"
        }
        if problem.contains("mapping values are not allowed") {
            return "quote values that contain ': ', e.g. \"a: b\""
        }
        return nil
    }

    /// The text of 1-based line `number` of the source.
    private func lineText(_ number: Int) -> String {
        source.withUnsafeBytes { bytes in
            var line = 1
            var text: Range<Int>?
            let unfinished = NewlineScan.forEachLine(in: bytes) { range, _ in
                if line == number { text = range }
                line += 1
            }
            if line == number && unfinished < bytes.count { text = unfinished..<bytes.count }
            return text.map { String(decoding: UnsafeRawBufferPointer(rebasing: bytes[$0]), as: UTF8.self) } ?? ""
        }
    }

    /// The 1-based line and character column of a byte offset in the source.
    private func markForByteOffset(_ offset: Int) -> ConfigMark {
        var line = 1
        var column = 1
        for byte in source.prefix(offset) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return ConfigMark(file: file, line: line, column: column)
    }
}
