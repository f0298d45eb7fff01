import UplinkConfig
import UplinkCore
import UplinkSources

/// `type: journald` (see `JournaldConfig`):
/// - `units` (list of unit names): only these units' entries (`_SYSTEMD_UNIT`; `.service` added to a name without
///   a `.`). Default: every unit.
/// - `matches` (list of `FIELD=value`): only entries with these field values (same field: either; different fields:
///   all). Default: none.
/// - `priority` (level name or 0 to 7): only entries at this level or more severe. Default: every entry.
/// - `since` (`now`, `beginning`, RFC 3339 time, or a duration before the start): where a first start begins.
///   Default `now`.
/// - `directory` (path): a journal directory instead of the system journal. Default: the system journal.
/// - `max_line_bytes` (size, 1 B to 16 MiB): longer messages are cut and marked. Default `64KiB`.
/// - `checkpoint_interval` (duration > 0): the acknowledged cursor is written at most this often. Default `1s`.
extension SourceDecoding {
    static let journaldKeys = [
        "units", "matches", "priority", "since", "directory", "max_line_bytes", "checkpoint_interval",
    ]

    static func decodeJournald(_ mapping: ConfigMapping) -> JournaldConfig {
        let decoder = mapping.decoder
        var config = JournaldConfig()
        if let units = mapping.list("units") {
            for element in units {
                guard let unit = decoder.string(element.node, at: element.path) else { continue }
                if unit.contains(where: { $0 == "=" || $0 == "/" || $0.isWhitespace }) {
                    decoder.report(
                        .invalidValue, at: element.node.mark, path: element.path, "invalid unit name '\(unit)'",
                        hint: "a systemd unit such as 'ssh.service' or 'ssh'; use 'matches' for other fields")
                } else {
                    config.units.append(unit)
                }
            }
        }
        if let matches = mapping.list("matches") {
            for element in matches {
                guard let text = decoder.string(element.node, at: element.path) else { continue }
                switch JournaldMatch.parse(text) {
                case .success(let match): config.matches.append(match)
                case .failure(let error):
                    decoder.report(
                        .invalidValue, at: element.node.mark, path: element.path, "invalid match: \(error)",
                        hint: "FIELD=value with an upper-case journal field, e.g. '_TRANSPORT=kernel'")
                }
            }
        }
        if let node = mapping.value("priority"), let text = decoder.string(node, at: mapping.path("priority")) {
            if let priority = JournaldPriority(parsing: text) {
                config.priority = priority
            } else {
                decoder.report(
                    .invalidValue, at: node.mark, path: mapping.path("priority"), "unknown priority '\(text)'",
                    hint: "one of " + JournaldPriority.spellings)
            }
        }
        if let node = mapping.value("since"), let text = decoder.string(node, at: mapping.path("since")) {
            if let since = JournaldSince(parsing: text, duration: { try? ConfigValueParsing.duration($0) }) {
                config.since = since
            } else {
                decoder.report(
                    .invalidValue, at: node.mark, path: mapping.path("since"), "invalid since '\(text)'",
                    hint: "'now', 'beginning', an RFC 3339 time such as 2026-11-20T08:00:00Z, or a duration such as 1h")
            }
        }
        if let directory = mapping.string("directory") { config.directory = absolutePath(directory) }
        if let bytes = mapping.size("max_line_bytes", .between(1, 16 << 20)) { config.maxLineBytes = bytes }
        if let interval = mapping.duration("checkpoint_interval", .greaterThan(.zero)) { config.checkpointInterval = interval }
        return config
    }
}
