import UplinkConfig
import UplinkCore

/// Values several source kinds read, with the same checks and messages for all of them (for the kinds of this module).
extension ConfigMapping {
    /// `key` as a mapping of tag names to strings, in document order.
    func tags(_ key: String) -> [Tag]? {
        guard let tagMapping = mapping(key, allowedKeys: nil) else { return nil }
        var tags: [Tag] = []
        for entry in tagMapping.entries {
            if let value = tagMapping.decoder.string(entry.value, at: tagMapping.path(entry.name)) {
                tags.append(Tag(entry.name, value))
            }
        }
        return tags
    }

    /// `key` as a list of non-empty strings.
    func strings(_ key: String) -> [String]? {
        list(key) { element in decoder.string(element.node, at: element.path) }
    }

    /// `key` as a list of strings that must not be empty when present: an empty list is reported with `message`
    /// and `hint`, and reads as nil.
    func nonEmptyStrings(_ key: String, ifEmpty message: String, hint: String) -> [String]? {
        guard let strings = strings(key) else { return nil }
        if strings.isEmpty {
            if let node = value(key) { decoder.report(.invalidValue, at: node.mark, path: path(key), message, hint: hint) }
            return nil
        }
        return strings
    }

    /// `key` as a metric name: dotted lowercase, `[a-z0-9_]` segments separated by `.`.
    func metricName(_ key: String) -> String? {
        string(key) { name in
            let segments = name.split(separator: ".", omittingEmptySubsequences: false)
            let valid = segments.allSatisfy { segment in
                !segment.isEmpty && segment.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "_") }
            }
            return valid
                ? .success(name)
                : .failure(ConfigValueError(
                    message: "invalid metric name '\(name)'", hint: "dotted lowercase, e.g. 'enclosure.temperature' (see docs/metrics.md)"))
        }
    }

    /// `key` as a unit of docs/metrics.md (`MetricUnit.all`), or empty (`""`).
    func metricUnit(_ key: String) -> String? {
        string(key, allowEmpty: true) { unit in
            unit.isEmpty || MetricUnit.all.contains(unit)
                ? .success(unit)
                : .failure(ConfigValueError(
                    message: "unknown unit '\(unit)'", hint: "one of: " + MetricUnit.all.joined(separator: ", ") + ", or \"\" for none"))
        }
    }
}
