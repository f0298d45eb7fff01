#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import UplinkConfig
import UplinkCore

/// `type: tail`: its keys, decoding, documentation and example.
extension TailConfig {
    public static let typeName = "tail"

    /// A line read is written out on the same thread: the reads are `pread`s of files already open, waits (buffer
    /// space, the next event) suspend, and checkpoint `fsync`s run on NIO's thread pool.
    public static let runsOnSendPathLoop = true

    public static var defaults: TailConfig { TailConfig() }

    public static let summary = #"""
        Follows log files and sends every line as a log record (`log` = the line without its `\n` and a trailing `\r`,
        `fields.path` = the file), so that no line is lost or stored twice through rotation, truncation and restarts.

        - **Finding files.** `paths` are glob patterns (`*` and `?` within one path component, `[abc]`, `[a-z]`, `[!x]`,
          and `**` for any number of directories; `*` also matches names starting with `.`, and `**` does not follow
          symbolic links to directories); relative patterns are taken from the working directory. Files matching
          `exclude` are skipped: a pattern without `/` is matched against the file name, one with `/` against the whole
          path. New files are noticed at once through inotify (or within `discovery_interval` when polling), and read from
          their beginning.
        - **Where to start.** A file with a checkpoint resumes exactly there, also when it was renamed while the agent
          was stopped. A file without one that already existed when the source started begins at `start_at` (`end`: only
          new lines; `beginning`: everything in it); a different file now at a checkpointed path is read from its start.
        - **Rotation.** A file is known by its device and inode plus a fingerprint of its first bytes, so a reused
          inode is not taken for the old file. Rename-and-create: the renamed file is read to its end, then the new
          file from its start; include rotated names in `paths` (`app.log*`) if files may be rotated more than once
          before the agent looks. A renamed or deleted file stays open until it has not grown for 1 s (a writer may
          still be finishing its last lines), at most 128 of them at once (beyond that the oldest ones already read to
          their end are closed without waiting). Records keep the `path` the file was followed at. copytruncate and
          truncation: the shrink is noticed; when the directory holds a copy of the old content (a regular file with
          the incarnation's first 256 bytes: logrotate's `copytruncate` leaves one; an incarnation shorter than 256
          bytes is not matched), what the tailer had not read yet is read from that copy first, as the same
          incarnation; then the file is read again from the start as a new incarnation. Only lines written between
          logrotate's copy and its truncate are lost (no reader can see them; prefer rename-and-create), and those of
          a copy compressed before the tailer noticed (`compress` without `delaycompress`), and, as with renames, an
          incarnation copied away and truncated before the tailer read any of it (two rotations closer together than the
          tailer looks, on an overloaded box): it exists only in a copy `paths` does not name; include the copies' names
          (`app.log*`) to have those read too. A line the copy caught in
          the middle of a write is sent as far as the copy holds it, unless the tailer had read it whole from the
          file. When `paths` also matches the copy (`app.log*` and logrotate's `app.log.1`), the copy is not read as a
          file of its own: a new file whose first 256 bytes are those of a followed file is taken for its copy and
          continues that file's incarnation (same origin and offsets), so each line before the copy is sent exactly
          once. A new file shorter than 256 bytes that begins like a followed file in its directory waits for more
          bytes, at most 1 s, before it is read as a new file. (A copy of a file shorter than 256 bytes is not
          recognised and is read as a new file.) A deleted file is read to its end, then forgotten.
        - **Many files.** A file read to its end that has not changed for 5 s is closed (its place and identity are kept)
          and opened again when it changes: with inotify its directory reports the write by name, when polling it is looked
          at (`stat`) every `poll_interval`. So thousands of matched files (rotated `app.log.1` … `app.log.9999`) do not
          hold thousands of descriptors or inotify watches (directories are watched, and only files being read), and an
          event costs the file it names, not a look at every file.
        - **Checkpoints.** The offset reached in each file is written to `<agent.state_dir>/tail/<source name>.checkpoints`
          (temporary file, `fsync`, `rename`), and only up to lines the collector has acknowledged, at most every
          `checkpoint_interval` and only when an offset moved; while the acknowledged offsets moved less than 1 MiB in all
          since the last write (a trickle of lines), every 30 intervals, so a quiet log costs no write and no `fsync`
          (on an SD card, wear) every interval. When fewer than a quarter of the files moved since that
          file was written, only their entries are written, to `<source name>.checkpoints.changes` beside it (so
          thousands of files at rest cost nothing per checkpoint); otherwise the whole file is rewritten and the changes
          file removed. After a restart the tailer resumes there. After a crash the checkpoint can lag the last acknowledgement by up to
          `checkpoint_interval` (a trickle: 30 intervals, less than 1 MiB); the lines in between are sent again, and the
          collector recognises them by their origin
          (docs/protocol.md, "Origins") and stores them once.
        - **Back-pressure.** When the agent's buffer is full the tailer stops reading until there is room: the file on disk
          is its buffer, and nothing is dropped. (Frames from the tailer are never evicted to make room for sensors.)
        - **Long and odd lines.** A line longer than `max_line_bytes` is cut to that length and gets the field
          `truncated` (its full length in bytes); the rest of it is skipped. Bytes that are not UTF-8 are replaced with
          U+FFFD. A last line without a newline is sent once it has not grown for `partial_line_timeout`; what is appended
          to it later becomes a record of its own. `max_line_bytes` also caps a record joined by `multiline`.
        """#

    public static let keys = [
        SourceKey("paths", "non-empty list of glob patterns", default: SourceKey.required, "Files to follow."),
        SourceKey("exclude", "list of glob patterns", default: "none", "Files never to follow."),
        SourceKey(
            "start_at", "`end` or `beginning`", default: "`end`",
            "Where to start in a file without a checkpoint that existed at start."),
        SourceKey(
            "watch", "`auto` or `poll`", default: "`auto`",
            "`auto`: inotify, falling back to polling (with a warning) where it is unavailable or its limits are reached. "
                + "`poll`: always poll (network file systems)."),
        SourceKey("poll_interval", "duration, > 0", default: "`250ms`", "How often files are checked for new data when polling."),
        SourceKey(
            "discovery_interval", "duration, > 0", default: "`10s`",
            "How often the patterns are expanded again (with inotify only a safety net, skipped while none of the "
                + "watched directories changed)."),
        .maxLineBytes("Longest line sent whole."),
        SourceKey(
            "partial_line_timeout", "duration, > 0", default: "`1s`", "How long a last line without newline waits for the rest."),
        SourceKey(
            "multiline.start_pattern", "regular expression", default: "none",
            #"A line that does not match it is joined (with `\n`) to the record before it, e.g. `^\d{4}-\d{2}-\d{2}` for "#
                + "logs whose records start with a date and continue with stack-trace lines."),
        SourceKey(
            "multiline.timeout", "duration, > 0", default: "`1s`",
            "A multi-line record is sent when no continuation line came for this long."),
        .checkpointInterval(
            "Acknowledged offsets are written at most this often (while they moved less than 1 MiB: every 30 intervals), and once more at shutdown."),
    ]

    public static let example = #"""
          # Log files, followed through rotation; a line is sent once even across restarts (checkpoints in state_dir).
          # Try `echo hello >> quickstart.log` while the quickstart runs.
          - name: app-log
            type: tail
            paths: [quickstart.log]   # glob patterns (*, ?, [a-z], ** = any directories); relative to the working directory. Required.
            exclude: ["*.gz"]         # glob patterns of files to skip. Default: none.
            start_at: beginning       # end or beginning: where a file without a checkpoint that existed at start begins. Default: end.
            watch: auto               # auto (inotify, falling back to polling) or poll. Default: auto.
            poll_interval: 250ms      # how often files are checked when polling. Default: 250ms.
            discovery_interval: 10s   # how often the patterns are expanded again. Default: 10s.
            max_line_bytes: 64KiB     # longer lines are cut and get the field `truncated`. Default: 64KiB.
            partial_line_timeout: 1s  # a last line without newline is sent after this long. Default: 1s.
            checkpoint_interval: 1s   # acknowledged offsets are written at most this often. Default: 1s.
            # Records that span lines (stack traces): a line matching start_pattern (a regex) starts a record, any other
            # line joins the record before it; timeout sends a record when no continuation came for that long (default 1s).
            # Default: none (every line is a record).
            # multiline: { start_pattern: '^\d{4}-\d{2}-\d{2}', timeout: 1s }
        """#

    public static func decode(_ mapping: ConfigMapping) -> TailConfig {
        var config = TailConfig()
        if mapping.require("paths", hint: "e.g. 'paths: [/var/log/app/*.log]'") != nil,
            let paths = mapping.nonEmptyStrings(
                "paths", ifEmpty: "at least one path is required", hint: "glob patterns such as /var/log/*.log")
        {
            config.paths = paths.map(absolutePath)
        }
        if let exclude = mapping.strings("exclude") { config.exclude = exclude.map(absolutePath) }
        if let startAt = mapping.enumeration("start_at", as: TailStartPosition.self) { config.startAt = startAt }
        if let watch = mapping.enumeration("watch", as: TailWatchMethod.self) { config.watch = watch }
        if let interval = mapping.duration("poll_interval", .greaterThan(.zero)) { config.pollInterval = interval }
        if let interval = mapping.duration("discovery_interval", .greaterThan(.zero)) { config.discoveryInterval = interval }
        if let bytes = mapping.maxLineBytes() { config.maxLineBytes = bytes }
        if let timeout = mapping.duration("partial_line_timeout", .greaterThan(.zero)) { config.partialLineTimeout = timeout }
        if let interval = mapping.checkpointInterval() { config.checkpointInterval = interval }
        if let multiline = mapping.mapping("multiline", allowedKeys: ["start_pattern", "timeout"]) {
            if multiline.require("start_pattern", hint: "a regex matching the first line of a record, e.g. '^\\\\d{4}-'") != nil,
                let pattern = multiline.string("start_pattern", { pattern in
                    validateRegex(pattern).map { problem in
                        .failure(ConfigValueError(message: "invalid regular expression: \(problem)", hint: "Swift Regex syntax, like PCRE"))
                    } ?? .success(pattern)
                })
            {
                config.multilineStartPattern = pattern
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
