/// The names the items of one list have taken so far (`sources[].name`, `collector.sinks[].name`): each item needs
/// a `name` of its own, and a second item with a name is reported at its `name`, pointing at the first.
public struct ConfigItemNames {
    /// What the items are, in messages: `source`, `sink`.
    public let what: String
    private var firstUse: [String: ConfigElement] = [:]

    /// No names taken yet, for a list of `what`s.
    public init(of what: String) {
        self.what = what
    }

    /// The required key `name` of `item` (one item of the list), read by `check` and taken; nil when it is missing,
    /// refused by `check` or taken by an earlier item (each reported, `missing` as the hint of a missing name).
    public mutating func take(
        _ item: ConfigMapping, missing: String, _ check: (String) -> Result<String, ConfigValueError>
    ) -> String? {
        guard let node = item.require("name", hint: missing), let name = item.string("name", check) else { return nil }
        if let first = firstUse[name] {
            item.decoder.report(
                .duplicateName, at: node.mark, path: item.path("name"),
                "duplicate \(what) name '\(name)' (first used by \(first.path) at line \(first.node.mark.line))",
                hint: "\(what) names must be unique")
            return nil
        }
        firstUse[name] = ConfigElement(node: node, path: item.path)
        return name
    }
}
