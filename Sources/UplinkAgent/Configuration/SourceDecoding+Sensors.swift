import UplinkConfig
import UplinkCore
import UplinkSources

/// The keys every sensor kind (all but `generator`) shares:
/// - `interval` (duration > 0): time between samples, aligned to the wall clock. Default `10s`.
/// - `jitter` (duration ≥ 0, below `interval`): largest random delay after each aligned tick. Default `0s`.
/// - `tags` (mapping of strings): tags added to every metric of the source. Default: none.
extension SourceDecoding {
    static let sensorKeys = ["interval", "jitter", "tags"]

    /// The schedule and tags of a sensor: `interval`, `jitter` (must be below the interval) and `tags`.
    static func decodeSensor(_ mapping: ConfigMapping, interval: inout Duration, jitter: inout Duration, tags: inout [Tag]) {
        if let value = mapping.duration("interval", .greaterThan(.zero)) { interval = value }
        if let value = mapping.duration("jitter", .atLeast(.zero)) {
            if value >= interval, let node = mapping.value("jitter") {
                mapping.decoder.report(
                    .invalidValue, at: node.mark, path: mapping.path("jitter"), "jitter must be shorter than the interval",
                    hint: "e.g. 'jitter: 1s' with 'interval: 10s'")
            } else {
                jitter = value
            }
        }
        if let value = decodeTags(mapping, "tags") { tags = value }
    }

    /// `key` as a mapping of tag names to strings, in document order.
    static func decodeTags(_ mapping: ConfigMapping, _ key: String) -> [Tag]? {
        guard let tagMapping = mapping.mapping(key, allowedKeys: nil) else { return nil }
        var tags: [Tag] = []
        for entry in tagMapping.entries {
            if let value = tagMapping.decoder.string(entry.value, at: tagMapping.path(entry.name)) {
                tags.append(Tag(entry.name, value))
            }
        }
        return tags
    }

    /// `key` as a list of non-empty strings.
    static func decodeStrings(_ mapping: ConfigMapping, _ key: String) -> [String]? {
        mapping.list(key) { element in mapping.decoder.string(element.node, at: element.path) }
    }
}
