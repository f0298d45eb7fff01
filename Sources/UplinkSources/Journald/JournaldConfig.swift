import UplinkCore

/// A syslog priority level as the journal stores it in `PRIORITY` (0 is the most severe).
public enum JournaldPriority: Int, Sendable, Equatable, CaseIterable {
    case emerg = 0
    case alert = 1
    case crit = 2
    case err = 3
    case warning = 4
    case notice = 5
    case info = 6
    case debug = 7

    /// The level's name as `journalctl --priority` spells it.
    public var name: String {
        switch self {
        case .emerg: "emerg"
        case .alert: "alert"
        case .crit: "crit"
        case .err: "err"
        case .warning: "warning"
        case .notice: "notice"
        case .info: "info"
        case .debug: "debug"
        }
    }

    /// Every accepted spelling, for messages.
    public static let spellings = "emerg, alert, crit, err, warning, notice, info, debug (or 0 to 7)"

    /// The level named `text`: a name of `journalctl --priority` (`err`, `warning`, …; also `error`, `warn`,
    /// `critical`, `emergency`, `panic`), or a digit 0 to 7. Nil for anything else.
    public init?(parsing text: String) {
        switch text.lowercased() {
        case "emerg", "emergency", "panic", "0": self = .emerg
        case "alert", "1": self = .alert
        case "crit", "critical", "2": self = .crit
        case "err", "error", "3": self = .err
        case "warning", "warn", "4": self = .warning
        case "notice", "5": self = .notice
        case "info", "informational", "6": self = .info
        case "debug", "7": self = .debug
        default: return nil
        }
    }
}

/// Where a `journald` source starts when it has no cursor checkpoint (its first start).
public enum JournaldSince: Sendable, Equatable {
    /// After the last entry in the journal: only entries added from now on.
    case now
    /// At the oldest entry in the journal.
    case beginning
    /// At the first entry at or after this time, in microseconds since the Unix epoch.
    case time(microseconds: Int64)
    /// At the first entry at or after this long before the start.
    case ago(Duration)

    /// The value of a `since` key: `now`, `beginning`, an RFC 3339 time (`2026-11-20T08:00:00Z`,
    /// `2026-11-20T09:00:00.5+01:00`) or a duration before the start (`10m`, `24h`). Nil for anything else.
    public init?(parsing text: String, duration: (String) -> Duration?) {
        switch text {
        case "now": self = .now
        case "beginning": self = .beginning
        default:
            if let microseconds = Self.rfc3339Microseconds(text) {
                self = .time(microseconds: microseconds)
            } else if let duration = duration(text), duration >= .zero {
                self = .ago(duration)
            } else {
                return nil
            }
        }
    }

    /// Microseconds since the Unix epoch of an RFC 3339 time with a `Z` or `±HH:MM` offset (`T` or a space between
    /// date and time, up to 9 fraction digits, of which 6 count). Nil when `text` is not one, or names a date before
    /// 1970 or after 9999.
    public static func rfc3339Microseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        var position = 0
        func digits(_ count: Int) -> Int? {
            guard position + count <= bytes.count, let value = ASCIIDecimal.value(bytes[position..<(position + count)])
            else { return nil }
            position += count
            return Int(value)
        }
        func expect(_ characters: String) -> Bool {
            guard position < bytes.count, characters.utf8.contains(bytes[position]) else { return false }
            position += 1
            return true
        }
        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2),
            expect("Tt "), let hour = digits(2), expect(":"), let minute = digits(2), expect(":"),
            let second = digits(2)
        else { return nil }
        guard year >= 1970, (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
            hour <= 23, minute <= 59, second <= 60
        else { return nil }
        var microseconds = 0
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            let count = ASCIIDecimal.leading(bytes[position...]).length
            guard (1...9).contains(count), let counted = ASCIIDecimal.value(bytes[position..<(position + min(count, 6))])
            else { return nil }
            microseconds = Int(counted)
            if count < 6 { for _ in count..<6 { microseconds *= 10 } }
            position += count
        }
        var offsetSeconds = 0
        if expect("Zz") {
            // UTC
        } else if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
            let sign = bytes[position] == UInt8(ascii: "-") ? -1 : 1
            position += 1
            guard let hours = digits(2), expect(":"), let minutes = digits(2), hours <= 23, minutes <= 59 else { return nil }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard position == bytes.count else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86400 + hour * 3600 + minute * 60 + second - offsetSeconds
        guard seconds >= 0 else { return nil }
        return Int64(seconds) * 1_000_000 + Int64(microseconds)
    }

    private static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the date (proleptic Gregorian; Howard Hinnant's `days_from_civil`).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146097 + dayOfEra - 719468
    }
}

/// Configuration of a `journald` source, which reads the systemd journal and sends every entry as a log record.
///
/// Every record's message is the entry's `MESSAGE`, its timestamp the journal's own (`__REALTIME_TIMESTAMP`, when
/// journald received the entry), and it carries these fields when the entry has them: `unit` (`_SYSTEMD_UNIT`),
/// `priority` (`PRIORITY`, 0 to 7), `pid` (`_PID`), `hostname` (`_HOSTNAME`) and `syslog_identifier`
/// (`SYSLOG_IDENTIFIER`); and `truncated` (the message's full length in bytes) when the message was cut to
/// `maxLineBytes`.
public struct JournaldConfig: RunnableSourceKindConfig {
    /// Only entries of these systemd units (YAML key `units`, a list of unit names). Default: none, every unit.
    /// A name without a `.` gets `.service` appended (`ssh` is `ssh.service`, as with `journalctl -u`); an entry
    /// matches when its `_SYSTEMD_UNIT` is one of them.
    public var units: [String]

    /// Only entries whose fields have these values (YAML key `matches`, a list of `FIELD=value` strings, e.g.
    /// `_TRANSPORT=kernel`). Default: none. Values of the same field are alternatives (either matches); different
    /// fields must all match, and all of them must match together with `units` and `priority` (sd-journal's rules).
    /// Field names are 1 to 64 upper-case letters, digits and `_`, not starting with a digit.
    public var matches: [JournaldMatch]

    /// Only entries at this level or more severe (YAML key `priority`, a level name such as `warning`, or 0 to 7).
    /// Default: none, every entry (entries without a `PRIORITY` field included). With a level, entries without
    /// `PRIORITY` are left out, as with `journalctl --priority`.
    public var priority: JournaldPriority?

    /// Where the first start begins (YAML key `since`): `now` (only entries added after the start), `beginning`
    /// (the oldest entry kept), an RFC 3339 time, or a duration before the start (`1h`). Default: `now`. Only
    /// without a cursor checkpoint: once there is one, the source resumes after the last acknowledged entry.
    public var since: JournaldSince

    /// The journal directory to read (YAML key `directory`, a path). Default: none, the local system journal
    /// (`/var/log/journal` and `/run/log/journal`, as `journalctl` reads it; the agent's user needs to be in the
    /// `systemd-journal` group). Set it for a container's or another machine's journal, or for tests: every
    /// `*.journal` file in it is read, and files added to it later are followed.
    public var directory: String?

    /// Longest message sent, in bytes (YAML key `max_line_bytes`, a size). Default: 65536. A longer message is cut to
    /// this many bytes and its record gets the field `truncated` with its full length; the tailer's rule. Values
    /// below 1 count as 1.
    public var maxLineBytes: Int

    /// How often the cursor of the last acknowledged entry is written to the checkpoint file (YAML key
    /// `checkpoint_interval`, a duration). Default: 1 second; while less than 1 MiB of entries was acknowledged since the
    /// last write, every 30 intervals (`CheckpointSchedule`). It is written once more at shutdown. The file is
    /// `<agent.state_dir>/journald/<source name>.cursor`; without a state directory the cursor is kept in memory
    /// only.
    public var checkpointInterval: Duration

    /// The defaults listed with each property.
    public init() {
        units = []
        matches = []
        priority = nil
        since = .now
        directory = nil
        maxLineBytes = 65536
        checkpointInterval = .seconds(1)
    }

    /// The unit name matched for a configured `units` entry: `.service` appended when it has no `.`.
    public static func unitName(_ unit: String) -> String {
        unit.contains(".") ? unit : unit + ".service"
    }
}

extension JournaldMatch {
    /// Whether `unit` can name a systemd unit (or a pattern of them): no `/`, `=` or whitespace. Local `units` and a
    /// remote configuration's `allow.journald_units` both check this.
    public static func isUnitPattern(_ unit: String) -> Bool {
        !unit.contains(where: { $0 == "=" || $0 == "/" || $0.isWhitespace })
    }
}

/// One `FIELD=value` entry of `JournaldConfig.matches`.
public struct JournaldMatch: Sendable, Equatable {
    /// The journal field's name, e.g. `_TRANSPORT`.
    public var field: String
    /// The value it must have (any bytes, compared exactly).
    public var value: String

    /// The entry `field=value`.
    public init(field: String, value: String) {
        self.field = field
        self.value = value
    }

    /// Parses `FIELD=value`; returns the match or why it is not one.
    public static func parse(_ text: String) -> Result<JournaldMatch, SourceError> {
        guard let equals = text.firstIndex(of: "=") else {
            return .failure(SourceError("'\(text)' is not FIELD=value"))
        }
        let field = String(text[..<equals])
        if let problem = fieldNameProblem(field) { return .failure(SourceError(problem)) }
        return .success(JournaldMatch(field: field, value: String(text[text.index(after: equals)...])))
    }

    /// Why `name` cannot name a journal field (1 to 64 of `A-Z`, `0-9`, `_`, not starting with a digit), or nil.
    public static func fieldNameProblem(_ name: String) -> String? {
        if name.isEmpty { return "the field name before '=' is empty" }
        if name.utf8.count > 64 { return "the field name '\(name)' is longer than 64 characters" }
        let valid = name.utf8.allSatisfy { ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) || ByteParsing.isDigit($0) || $0 == UInt8(ascii: "_") }
        if !valid { return "the field name '\(name)' may hold only upper-case letters, digits and '_'" }
        if let first = name.utf8.first, ByteParsing.isDigit(first) {
            return "the field name '\(name)' starts with a digit"
        }
        return nil
    }
}
