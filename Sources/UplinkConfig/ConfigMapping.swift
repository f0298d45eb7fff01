import UplinkCore

/// One mapping of the document, read key by key. Absent keys and keys set to null read as nil, so the caller's
/// default applies; unusable values are reported to the decoder and also read as nil.
///
/// A mapping created with `allowedKeys` reports every other key at once as `unknown_key`, with the closest
/// allowed key as a suggestion.
public struct ConfigMapping {
    /// The decoder issues go to.
    public let decoder: ConfigDecoder
    /// The mapping node (for a section written as null, an empty mapping at the null's position).
    public let node: ConfigNode
    /// The mapping's path.
    public let path: ConfigPath

    init(decoder: ConfigDecoder, node: ConfigNode, path: ConfigPath, allowedKeys: [String]?) {
        self.decoder = decoder
        self.node = node
        self.path = path
        if let allowedKeys { rejectUnknownKeys(allowed: allowedKeys) }
    }

    /// The entries in document order.
    public var entries: [ConfigEntry] { node.entries ?? [] }

    /// The mapping's keys in document order.
    public var keys: [String] { entries.map(\.name) }

    /// Whether `key` is present (even with a null value).
    public func contains(_ key: String) -> Bool {
        entries.contains { $0.name == key }
    }

    /// The entry for `key`, if present.
    public func entry(_ key: String) -> ConfigEntry? {
        entries.first { $0.name == key }
    }

    /// The value of `key`, or nil when it is absent or null.
    public func value(_ key: String) -> ConfigNode? {
        guard let node = entry(key)?.value, !node.isNull else { return nil }
        return node
    }

    /// The path of `key` in this mapping.
    public func path(_ key: String) -> ConfigPath { path.appending(key) }

    /// Reports every key not in `allowed` as `unknown_key`, at the key, with a suggestion.
    public func rejectUnknownKeys(allowed: [String]) {
        for entry in entries where !allowed.contains(entry.name) {
            decoder.report(
                .unknownKey, at: entry.key.mark, path: path(entry.name), "unknown key '\(entry.name)'",
                hint: ConfigSuggestions.hint(for: entry.name, among: allowed, listing: "allowed keys"))
        }
    }

    /// The value of `key`; when it is absent or null, reports `missing_key` (at the mapping when absent, at the null
    /// value otherwise) and returns nil.
    public func require(_ key: String, hint: String? = nil) -> ConfigNode? {
        guard let entry = entry(key) else {
            decoder.report(.missingKey, at: node.mark, path: path(key), "missing required key '\(key)'", hint: hint)
            return nil
        }
        guard !entry.value.isNull else {
            decoder.report(.missingKey, at: entry.value.mark, path: path(key), "'\(key)' needs a value", hint: hint)
            return nil
        }
        return entry.value
    }

    // MARK: - Typed values (nil when absent, null or unusable)

    /// The text of `key` (see `ConfigDecoder.string`).
    public func string(_ key: String, allowEmpty: Bool = false) -> String? {
        value(key).flatMap { decoder.string($0, at: path(key), allowEmpty: allowEmpty) }
    }

    /// The text of `key` read by `parse`: a text it refuses is reported at the value (`invalid_value`, with the
    /// error's message and hint) and reads as nil, as do an absent or null key and a value that is not text.
    public func string<Value>(
        _ key: String, allowEmpty: Bool = false, _ parse: (String) -> Result<Value, ConfigValueError>
    ) -> Value? {
        guard let node = value(key), let text = decoder.string(node, at: path(key), allowEmpty: allowEmpty) else {
            return nil
        }
        switch parse(text) {
        case .success(let value): return value
        case .failure(let error):
            decoder.report(error, at: node.mark, path: path(key))
            return nil
        }
    }

    /// The text of `key`, which must be present.
    public func requiredString(_ key: String, hint: String? = nil) -> String? {
        require(key, hint: hint).flatMap { decoder.string($0, at: path(key)) }
    }

    /// `key` as `true` or `false`.
    public func bool(_ key: String) -> Bool? {
        value(key).flatMap { decoder.bool($0, at: path(key)) }
    }

    /// `key` as an integer within `constraint`.
    public func int(_ key: String, _ constraint: ConfigConstraint<Int> = .any) -> Int? {
        value(key).flatMap { decoder.int($0, at: path(key), constraint) }
    }

    /// `key` as a finite number within `constraint`.
    public func double(_ key: String, _ constraint: ConfigConstraint<Double> = .any) -> Double? {
        value(key).flatMap { decoder.double($0, at: path(key), constraint) }
    }

    /// `key` as a duration (`250ms`, `10s`, …) within `constraint`.
    public func duration(_ key: String, _ constraint: ConfigConstraint<Duration> = .any) -> Duration? {
        value(key).flatMap { decoder.duration($0, at: path(key), constraint) }
    }

    /// `key` as a size in bytes (`64KiB`, `16MB`, `512`, …) within `constraint`.
    public func size(_ key: String, _ constraint: ConfigConstraint<Int> = .any) -> Int? {
        value(key).flatMap { decoder.size($0, at: path(key), constraint) }
    }

    /// `key` as an http(s) URL, or one of `specialValues`.
    public func url(_ key: String, specialValues: [String] = []) -> String? {
        value(key).flatMap { decoder.url($0, at: path(key), specialValues: specialValues) }
    }

    /// `key` as a `host:port` address.
    public func hostPort(_ key: String) -> ConfigHostPort? {
        value(key).flatMap { decoder.hostPort($0, at: path(key)) }
    }

    /// `key` as one of `allowed`.
    public func choice(_ key: String, allowed: [String]) -> String? {
        value(key).flatMap { decoder.choice($0, at: path(key), allowed: allowed) }
    }

    /// `key` as a case of `E`, by raw value.
    public func enumeration<E: CaseIterable & RawRepresentable>(_ key: String, as type: E.Type = E.self) -> E?
    where E.RawValue == String {
        value(key).flatMap { decoder.enumeration($0, at: path(key), as: type) }
    }

    /// `key` as a list; its items come with their paths.
    public func list(_ key: String) -> [ConfigElement]? {
        value(key).flatMap { decoder.list($0, at: path(key)) }
    }

    /// `key` as a list whose items are each read by `element` (items it returns nil for are left out).
    public func list<Element>(_ key: String, _ element: (ConfigElement) -> Element?) -> [Element]? {
        list(key).map { $0.compactMap(element) }
    }

    /// `key` as a list of strings, each read by `parse`: an item it refuses is reported at the item's own line with
    /// the error's message and hint, and left out. Nil when `key` is absent.
    public func strings<Value>(_ key: String, _ parse: (String) -> Result<Value, ConfigValueError>) -> [Value]? {
        list(key) { element in
            guard let text = decoder.string(element.node, at: element.path) else { return nil }
            switch parse(text) {
            case .success(let value): return value
            case .failure(let error):
                decoder.report(error, at: element.node.mark, path: element.path)
                return nil
            }
        }
    }

    /// `key` as a nested mapping whose keys are checked against `allowedKeys`. Present but null yields an empty
    /// mapping (so `collector:` alone turns a section on with its defaults); absent yields nil.
    public func mapping(_ key: String, allowedKeys: [String]?) -> ConfigMapping? {
        entry(key).flatMap { decoder.mapping($0.value, at: path(key), allowedKeys: allowedKeys) }
    }

    // MARK: - Secrets

    /// Largest secret file read, in bytes.
    public static let maximumSecretFileBytes = 64 * 1024

    /// A secret given either inline (`key`, e.g. `token`) or as the path of a file that holds it (`fileKey`,
    /// e.g. `token_file`), or nil when neither is set.
    ///
    /// The file is read when the configuration is loaded; its contents are trimmed of leading and trailing
    /// whitespace (so a trailing newline does not matter). A relative path is resolved against the directory of the
    /// configuration file. Reported: both keys set; an unreadable file (with the path and the system's error text);
    /// an empty file; a secret containing control characters (a line break inside a token would corrupt the HTTP
    /// header it is sent in).
    public func secret(_ key: String, fileKey: String) -> String? {
        let inline = value(key)
        let file = value(fileKey)
        if let inline, let file {
            let second = inline.mark.line > file.mark.line
                || (inline.mark.line == file.mark.line && inline.mark.column > file.mark.column) ? key : fileKey
            let secondNode = second == key ? inline : file
            decoder.report(
                .invalidValue, at: secondNode.mark, path: path(second),
                "'\(key)' and '\(fileKey)' are both set", hint: "keep only one of them")
            return nil
        }
        if let inline {
            guard let text = decoder.string(inline, at: path(key)) else { return nil }
            return checkedSecret(text, at: inline, path: path(key), what: "'\(key)'")
        }
        guard let file, let name = decoder.string(file, at: path(fileKey)) else { return nil }
        let resolved = ConfigFiles.resolve(name, relativeTo: decoder.baseDirectory)
        switch ConfigFiles.read(path: resolved, limit: Self.maximumSecretFileBytes) {
        case .failure(let error):
            decoder.report(
                .unreadableFile, at: file.mark, path: path(fileKey), "cannot read '\(resolved)': \(error)")
            return nil
        case .success(let bytes):
            let text = String(String(decoding: bytes, as: UTF8.self).trimming(while: \.isWhitespace))
            guard !text.isEmpty else {
                decoder.report(.unreadableFile, at: file.mark, path: path(fileKey), "'\(resolved)' is empty")
                return nil
            }
            return checkedSecret(text, at: file, path: path(fileKey), what: "the contents of '\(resolved)'")
        }
    }

    private func checkedSecret(_ text: String, at node: ConfigNode, path: ConfigPath, what: String) -> String? {
        guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            decoder.report(
                .invalidValue, at: node.mark, path: path, "\(what) contains a line break or another control character")
            return nil
        }
        return text
    }
}
