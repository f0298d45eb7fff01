#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import UplinkConfig
import UplinkSources

/// `type: tail` (see `TailConfig`):
/// - `paths` (non-empty list of glob patterns, required): files to follow; `*`, `?`, `[...]` and `**`. Relative
///   patterns are taken relative to the working directory.
/// - `exclude` (list of glob patterns, relative ones likewise): files to skip. Default: none.
/// - `start_at` (`end` or `beginning`): where to start in a file that has no checkpoint and existed at start.
///   Default `end`.
/// - `watch` (`auto` or `poll`): inotify with a polling fallback, or polling only. Default `auto`.
/// - `poll_interval` (duration > 0): how often files are checked when polling. Default `250ms`.
/// - `discovery_interval` (duration > 0): how often the globs are expanded again. Default `10s`.
/// - `max_line_bytes` (size, 1 B to 16 MiB): longer lines are cut and marked. Default `64KiB`.
/// - `partial_line_timeout` (duration > 0): a last line without newline is sent after this long. Default `1s`.
/// - `multiline.start_pattern` (regex): lines not matching it join the previous record. Default: none.
/// - `multiline.timeout` (duration > 0): a pending multi-line record is sent after this long. Default `1s`.
/// - `checkpoint_interval` (duration > 0): acknowledged offsets are written at most this often. Default `1s`.
extension SourceDecoding {
    static let tailKeys = [
        "paths", "exclude", "start_at", "watch", "poll_interval", "discovery_interval", "max_line_bytes",
        "partial_line_timeout", "multiline", "checkpoint_interval",
    ]

    static func decodeTail(_ mapping: ConfigMapping) -> TailConfig {
        var config = TailConfig()
        if let node = mapping.require("paths", hint: "e.g. 'paths: [/var/log/app/*.log]'") {
            if let paths = decodeStrings(mapping, "paths") {
                if paths.isEmpty {
                    mapping.decoder.report(
                        .invalidValue, at: node.mark, path: mapping.path("paths"), "at least one path is required",
                        hint: "glob patterns such as /var/log/*.log")
                } else {
                    config.paths = paths.map(absolutePath)
                }
            }
        }
        if let exclude = decodeStrings(mapping, "exclude") { config.exclude = exclude.map(absolutePath) }
        if let startAt = mapping.enumeration("start_at", as: TailStartPosition.self) { config.startAt = startAt }
        if let watch = mapping.enumeration("watch", as: TailWatchMethod.self) { config.watch = watch }
        if let interval = mapping.duration("poll_interval", .greaterThan(.zero)) { config.pollInterval = interval }
        if let interval = mapping.duration("discovery_interval", .greaterThan(.zero)) { config.discoveryInterval = interval }
        if let bytes = mapping.size("max_line_bytes", .between(1, 16 << 20)) { config.maxLineBytes = bytes }
        if let timeout = mapping.duration("partial_line_timeout", .greaterThan(.zero)) { config.partialLineTimeout = timeout }
        if let interval = mapping.duration("checkpoint_interval", .greaterThan(.zero)) { config.checkpointInterval = interval }
        if let multiline = mapping.mapping("multiline", allowedKeys: ["start_pattern", "timeout"]) {
            if let node = multiline.require("start_pattern", hint: "a regex matching the first line of a record, e.g. '^\\\\d{4}-'"),
                let pattern = multiline.string("start_pattern")
            {
                if let problem = TailConfig.validateRegex(pattern) {
                    mapping.decoder.report(
                        .invalidValue, at: node.mark, path: multiline.path("start_pattern"),
                        "invalid regular expression: \(problem)", hint: "Swift Regex syntax, like PCRE")
                } else {
                    config.multilineStartPattern = pattern
                }
            }
            if let timeout = multiline.duration("timeout", .greaterThan(.zero)) { config.multilineTimeout = timeout }
        }
        return config
    }

    /// `pattern` made absolute against the working directory (glob characters are left alone).
    static func absolutePath(_ pattern: String) -> String {
        if pattern.hasPrefix("/") { return pattern }
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return pattern }
        var directory = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if !directory.hasSuffix("/") { directory += "/" }
        return directory + (pattern.hasPrefix("./") ? String(pattern.dropFirst(2)) : pattern)
    }
}
