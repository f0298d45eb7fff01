import UplinkConfig
import UplinkCore

/// `type: journald`: its keys, decoding, documentation and example.
extension JournaldConfig {
    public static let typeName = "journald"

    public static var defaults: JournaldConfig { JournaldConfig() }

    public static let summary = #"""
        Reads the systemd journal and sends every entry as a log record: `log` = the entry's `MESSAGE` (an entry without
        one is sent with an empty message; a message with line breaks stays one record), the record's timestamp = the
        journal's own (`__REALTIME_TIMESTAMP`, when journald received the entry), and these fields when the entry has them:

        | field | journal field | |
        |---|---|---|
        | `unit` | `_SYSTEMD_UNIT` | The systemd unit that logged it. |
        | `priority` | `PRIORITY` | The syslog level, `0` (emerg) to `7` (debug). |
        | `pid` | `_PID` | The process id. |
        | `hostname` | `_HOSTNAME` | The host that logged it. |
        | `syslog_identifier` | `SYSLOG_IDENTIFIER` | The program name (`sshd`, `kernel`, …). |
        | `truncated` | | The message's full length in bytes, when it was cut to `max_line_bytes`. |

        Field values longer than 1 KiB are cut. No entry is lost or stored twice across restarts and crashes:

        - **How it reads.** Through libsystemd's sd-journal (the system library `libsystemd0`, loaded when a journald source
          first opens a journal, so agents without one do not load it and its dependencies; without it the source fails
          to start with "cannot load libsystemd … install libsystemd0" and the other sources run on), like
          `journalctl`: `units`, `matches` and `priority` become sd-journal matches, so entries that do not match are never
          read. The source follows the journal through sd-journal's inotify descriptor (a thread of its own waits on it):
          an idle source does not wake up. Files added, rotated and vacuumed by journald are picked up as journalctl does.
          Why not supervise `journalctl --output=json --follow --after-cursor` (as Vector does): that is a second process
          per source, a JSON parser for its output (which prints fields over 4 KiB as `null` unless `--all`, and binary
          ones as arrays of numbers), and a pipe between them, where sd-journal gives each field's bytes, the cursor and
          a descriptor to wait on directly; `libsystemd0` is on every box that has a journal, costs the binary only this
          source's code and is the library journalctl itself uses. journalctl's one advantage,
          a crash confined to a child process, is covered by the service's restart (see "Damaged journals").
        - **Which journal.** Without `directory`, the local system journal (`/var/log/journal`, or `/run/log/journal` without
          persistent storage), which needs the agent's user in the `systemd-journal` group (the packaged service has it).
          With `directory`, every `*.journal` file in that directory (a container's journal, one that
          `systemd-journal-remote` writes, or a test's).
        - **Where to start.** The first time (no checkpoint): `since`. `now` sends only entries added after the start;
          `beginning` everything the journal keeps; an RFC 3339 time (`2026-11-20T08:00:00Z`, `2026-11-20T09:00:00+01:00`)
          the entries from then on; a duration (`1h`) those of that long before the start.
        - **Checkpoints.** The cursor of the last entry the collector has acknowledged is written to
          `<agent.state_dir>/journald/<source name>.cursor` (temporary file, `fsync`, `rename`; never an entry that was only
          sent). A restart resumes with the entry after it; when journald has vacuumed that entry meanwhile, with the first
          entry after its place (entries vacuumed before they were read cannot be sent). After a crash the checkpoint can
          lag the last acknowledgement by up to `checkpoint_interval` (while the acknowledged entries add up to less than
          1 MiB since the last write, the cursor is written every 30 intervals: a quiet journal costs no write and no
          `fsync` every interval); the entries in between are sent again and the
          collector stores them once: every record carries an origin (docs/protocol.md, "Origins"), the journal's sequence
          id (hashed) and the entry's sequence number. Changing `units`, `matches` or `priority` keeps the checkpoint.
        - **Back-pressure.** When the agent's buffer is full the source stops reading until there is room: the journal is
          its buffer (as long as journald keeps the entries).
        - **Long and odd messages.** The tailer's rules: a message longer than `max_line_bytes` is cut to that length and
          gets the field `truncated` (its full length in bytes); bytes that are not UTF-8 (binary messages) are replaced
          with U+FFFD.
        - **Damaged journals.** Files sd-journal cannot read (corrupt, cut) are skipped, as journalctl skips them; a read
          error is retried on the next change or after 1 s, with one warning. sd-journal maps journal files into memory: a
          file cut short *while the source has it open* (journald never does that; a failing disk or a person might) can
          end the agent with SIGBUS, which systemd's own tools catch with an internal handler that libsystemd does not
          offer; the service restarts the agent and it resumes from its checkpoint.
        """#

    public static let keys = [
        SourceKey(
            "units", "list of unit names", default: "all units",
            "Only entries whose `_SYSTEMD_UNIT` is one of these; `.service` is appended to a name without a `.` "
                + "(`ssh` = `ssh.service`)."),
        SourceKey(
            "matches", "list of `FIELD=value`", default: "none",
            "Only entries with these field values. The same field given again: either value; different fields (and "
                + "`units`, `priority`): all must match. Field names: upper-case letters, digits, `_`, not starting with a "
                + "digit, at most 64."),
        SourceKey(
            "priority", "`emerg`, `alert`, `crit`, `err`, `warning`, `notice`, `info`, `debug` or `0` to `7`",
            default: "every entry",
            "Only entries at this level or more severe (entries without `PRIORITY` are then left out, as with "
                + "`journalctl -p`)."),
        SourceKey(
            "since", "`now`, `beginning`, RFC 3339 time or duration", default: "`now`",
            "Where the first start begins (with a checkpoint the source resumes after it)."),
        SourceKey(
            "directory", "path", default: "the system journal",
            "A journal directory to read instead; relative to the working directory. It must exist when the source starts."),
        .maxLineBytes("Longest message sent whole."),
        .checkpointInterval(
            "The acknowledged cursor is written at most this often (while less than 1 MiB of entries was acknowledged: every 30 intervals), and once more at shutdown."),
    ]

    public static let example = #"""
          # Entries of the systemd journal (read through libsystemd), with a cursor checkpoint under agent.state_dir/journald/:
          # a restart resumes after the last entry the collector acknowledged. Each record: the MESSAGE, the journal's own
          # timestamp, and the fields unit, priority, pid, hostname, syslog_identifier (when the entry has them). Reading the
          # system journal needs the agent's user in the systemd-journal group (the packaged service has it).
          - name: journal
            type: journald
            priority: warning         # only this level and more severe: emerg, alert, crit, err, warning, notice, info, debug or 0-7. Default: every entry.
            since: now                # where the first start begins: now, beginning, an RFC 3339 time, or a duration before the start (1h). Default: now.
            max_line_bytes: 64KiB     # longer messages are cut and get the field `truncated`. Default: 64KiB.
            checkpoint_interval: 1s   # the acknowledged cursor is written at most this often. Default: 1s.
            # units: [ssh, cron]      # only these systemd units (`.service` added to a name without a dot). Default: every unit.
            # matches: ["_TRANSPORT=kernel"]  # FIELD=value; the same field again: either value, other fields: all must match. Default: none.
            # directory: /var/log/journal/remote  # a journal directory (containers, other machines) instead of the system journal. Default: the system journal.
        """#

    public static func decode(_ mapping: ConfigMapping) -> JournaldConfig {
        var config = JournaldConfig()
        if let units = mapping.strings("units", { unit in
            JournaldMatch.isUnitPattern(unit)
                ? .success(unit)
                : .failure(ConfigValueError(
                    message: "invalid unit name '\(unit)'",
                    hint: "a systemd unit such as 'ssh.service' or 'ssh'; use 'matches' for other fields"))
        }) {
            config.units = units
        }
        if let matches = mapping.strings("matches", { text in
            JournaldMatch.parse(text).mapError { error in
                ConfigValueError(
                    message: "invalid match: \(error)",
                    hint: "FIELD=value with an upper-case journal field, e.g. '_TRANSPORT=kernel'")
            }
        }) {
            config.matches = matches
        }
        if let priority = mapping.string("priority", { text -> Result<JournaldPriority, ConfigValueError> in
            guard let priority = JournaldPriority(parsing: text) else {
                return .failure(ConfigValueError(message: "unknown priority '\(text)'", hint: "one of " + JournaldPriority.spellings))
            }
            return .success(priority)
        }) {
            config.priority = priority
        }
        if let since = mapping.string("since", { text -> Result<JournaldSince, ConfigValueError> in
            guard let since = JournaldSince(parsing: text, duration: { try? ConfigValueParsing.duration($0) }) else {
                return .failure(ConfigValueError(
                    message: "invalid since '\(text)'",
                    hint: "'now', 'beginning', an RFC 3339 time such as 2026-11-20T08:00:00Z, or a duration such as 1h"))
            }
            return .success(since)
        }) {
            config.since = since
        }
        if let directory = mapping.string("directory") { config.directory = TailConfig.absolutePath(directory) }
        if let bytes = mapping.maxLineBytes() { config.maxLineBytes = bytes }
        if let interval = mapping.checkpointInterval() { config.checkpointInterval = interval }
        return config
    }
}
