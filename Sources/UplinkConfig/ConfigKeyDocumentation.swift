import UplinkCore
import UplinkFiles

/// One key of a configuration table as docs/configuration.md shows it: the source kinds and the sink kinds each
/// describe their keys with these, and the reference and `examples.yaml` are generated from them.
public struct DocumentedKey: Sendable, Equatable {
    /// The key (`per_core`), or its path inside a nested mapping (`multiline.timeout`).
    public var name: String
    /// What the value is, with its unit and range, in Markdown (`duration, > 0`, `` `end` or `beginning` ``).
    public var type: String
    /// The default in Markdown (`` `10s` ``, `none`), or `**required**`.
    public var defaultValue: String
    /// What the key does, in Markdown.
    public var description: String

    /// A key with its type, default and description (all Markdown, as shown in the docs table).
    public init(_ name: String, _ type: String, default defaultValue: String, _ description: String) {
        self.name = name
        self.type = type
        self.defaultValue = defaultValue
        self.description = description
    }

    /// The default column of a required key.
    public static let required = "**required**"

    /// The part of `name` before the first dot: the key in the item's own mapping.
    public var topLevelName: String {
        name.split(separator: ".", maxSplits: 1).first.map(String.init) ?? name
    }
}

/// The text-assembly helpers behind the generated parts of docs/configuration.md and examples.yaml: both files hold
/// generated text between a begin and an end marker line, which a test compares and can rewrite.
public enum GeneratedDocumentation {
    /// A Markdown table of keys, as docs/configuration.md shows them.
    public static func table(_ keys: [DocumentedKey]) -> String {
        let rows = keys.map { "| `\($0.name)` | \($0.type) | \($0.defaultValue) | \($0.description) |" }
        return (["| key | type | default | |", "|---|---|---|---|"] + rows).joined(separator: "\n")
    }

    /// `a`, `a or b`, `a, b or c`.
    public static func list(_ items: [String], conjunction: String) -> String {
        guard items.count > 1 else { return items.first ?? "" }
        return items.dropLast().joined(separator: ", ") + " \(conjunction) " + items[items.count - 1]
    }

    /// The keys allowed in an item's mapping: the first part of every key in `keys`, in order, each once.
    public static func topLevelNames(_ keys: [DocumentedKey]) -> [String] {
        var names: [String] = []
        for key in keys where !names.contains(key.topLevelName) { names.append(key.topLevelName) }
        return names
    }

    /// Checks that the file at `path` holds `expected` between its marker lines, or with `rewrite` writes it there;
    /// returns the problem a test reports (missing markers, a stale part naming `command` to regenerate, an I/O
    /// error), or nil.
    public static func checkGeneratedPart(
        ofFileAt path: String, markers: (begin: String, end: String), expected: String, rewrite: Bool, command: String
    ) -> String? {
        let text: String
        switch ConfigFiles.read(path: path, limit: 4 << 20) {
        case .failure(let error): return "cannot read \(path): \(error)"
        case .success(let bytes): text = String(decoding: bytes, as: UTF8.self)
        }
        guard let current = generatedPart(of: text, begin: markers.begin, end: markers.end),
            let updated = replacingGeneratedPart(of: text, begin: markers.begin, end: markers.end, with: expected)
        else { return "\(path) lacks the marker lines '\(markers.begin)' and '\(markers.end)'" }
        if current == expected { return nil }
        guard rewrite else { return "\(path) is stale: run \(command)" }
        do {
            try AtomicFile.write(Array(updated.utf8), to: path)
            return nil
        } catch {
            return "cannot write \(path): \(error)"
        }
    }

    /// `text` with the lines between the marker lines `begin` and `end` replaced by `generated`; nil when the markers
    /// are missing or out of order.
    public static func replacingGeneratedPart(of text: String, begin: String, end: String, with generated: String) -> String? {
        guard let start = text.firstRange(of: begin + "\n"), let stop = text[start.upperBound...].firstRange(of: "\n" + end)
        else { return nil }
        return String(text[..<start.upperBound]) + generated + String(text[stop.lowerBound...])
    }

    /// The lines between the marker lines `begin` and `end` of `text`, or nil when the markers are missing.
    public static func generatedPart(of text: String, begin: String, end: String) -> String? {
        guard let start = text.firstRange(of: begin + "\n"), let stop = text[start.upperBound...].firstRange(of: "\n" + end)
        else { return nil }
        return String(text[start.upperBound..<stop.lowerBound])
    }
}
