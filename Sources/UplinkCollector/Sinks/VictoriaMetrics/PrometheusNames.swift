import UplinkCore

/// Prometheus-style series names and labels for uplink metrics (docs/architecture.md, "VictoriaMetrics"):
///
/// - name: the metric name with every character outside `[a-zA-Z0-9_:]` replaced by `_` (`cpu.user` →
///   `cpu_user`), `_` in front when it starts with a digit, then `_<unit>` unless the name already ends with it
///   (`percent` → `cpu_user_percent`; `bytes`, `seconds`, … the same way; no unit, no suffix);
/// - labels: `agent`, `source`, then each tag with its key made valid the same way (`[a-zA-Z_][a-zA-Z0-9_]*`);
///   a tag whose key becomes `agent`, `source`, `__name__` or starts with `__` is prefixed `tag_`, and a key that
///   collides with an earlier label gets `_2`, `_3`, … appended, so no tag overwrites another.
struct PrometheusNames {
    private var cache: [NameKey: String] = [:]

    private struct NameKey: Hashable {
        var name: String
        var unit: String
    }

    mutating func seriesName(_ name: String, unit: String) -> String {
        let key = NameKey(name: name, unit: unit)
        if let known = cache[key] { return known }
        var series = Self.sanitized(name, allowColon: true)
        let suffix = Self.sanitized(unit, allowColon: false)
        if !unit.isEmpty, !series.hasSuffix("_" + suffix), series != suffix {
            series += "_" + suffix
        }
        cache[key] = series
        return series
    }

    static func labels(agent: String, source: String, tags: [Tag]) -> [(String, String)] {
        var labels: [(String, String)] = [("agent", agent), ("source", source)]
        var used: Set<String> = ["agent", "source", "__name__"]
        for tag in tags {
            var key = sanitized(tag.key, allowColon: false)
            if used.contains(key) || key.hasPrefix("__") { key = "tag_" + key }
            var unique = key
            var index = 2
            while used.contains(unique) {
                unique = key + "_" + String(index)
                index += 1
            }
            used.insert(unique)
            labels.append((unique, tag.value))
        }
        return labels
    }

    static func sanitized(_ text: String, allowColon: Bool) -> String {
        guard !text.isEmpty else { return "_" }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 1)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "_"):
                bytes.append(byte)
            case UInt8(ascii: ":") where allowColon:
                bytes.append(byte)
            default:
                // One `_` per character, not per byte of a multi-byte character.
                if byte & 0xC0 != 0x80 { bytes.append(UInt8(ascii: "_")) }
            }
        }
        if let first = bytes.first, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) { bytes.insert(UInt8(ascii: "_"), at: 0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
