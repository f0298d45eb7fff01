/// Where a `tail` source starts reading a file that has no checkpoint and was already there when it started.
public enum TailStartPosition: String, Sendable, Equatable, CaseIterable {
    /// At the file's current end: only lines written from now on are sent.
    case end
    /// At the first byte: the whole file is sent.
    case beginning
}

/// How a `tail` source learns about new data and new files.
public enum TailWatchMethod: String, Sendable, Equatable, CaseIterable {
    /// inotify, falling back to polling when inotify is unavailable or its watch limit is exhausted.
    case auto
    /// Polling only (e.g. network file systems, where inotify does not see other hosts' writes).
    case poll
}

/// Configuration of a `tail` source, which follows log files and sends every line as a log record.
///
/// Every record carries the field `path` (the file's path when the line was read) and, when the line was cut
/// to `maxLineBytes`, the field `truncated` with the line's original length in bytes.
public struct TailConfig: RunnableSourceKindConfig {
    /// Glob patterns of the files to follow (YAML key `paths`, a list of strings, at least one). Default: none.
    /// `*` matches any run of characters within one path component (dot files included), `?` one character,
    /// `[a-c]` one character of a set or range (`[!x]` or `[^x]` negates it), `**` as a whole component any number
    /// of directories (zero included), and `\` escapes the next character. Relative patterns are relative to the
    /// agent's working directory. Only regular files are followed (symbolic links to them included).
    public var paths: [String]

    /// Glob patterns of files not to follow although `paths` matches them (YAML key `exclude`, a list of
    /// strings). Default: none. A pattern without `/` is matched against the file name only (`*.gz`), one with
    /// `/` against the whole path.
    public var exclude: [String]

    /// Where to start in a file that has no checkpoint and was already there when the source started (YAML key
    /// `start_at`: `end` or `beginning`). Default: `end`. Files that appear later are always read from their
    /// beginning, and a file with a checkpoint resumes exactly where the collector's acknowledgement left it.
    public var startAt: TailStartPosition

    /// How new data and new files are noticed (YAML key `watch`: `auto` or `poll`). Default: `auto`, inotify
    /// with a fallback to polling (and one warning) when inotify is unavailable or out of watches.
    public var watch: TailWatchMethod

    /// How often followed files are checked for new data, rotation and truncation when polling (YAML key
    /// `poll_interval`, a duration). Default: 250 milliseconds. With inotify it is only a safety net for the
    /// rotation checks.
    public var pollInterval: Duration

    /// How often the `paths` globs are expanded again to find new files (YAML key `discovery_interval`, a
    /// duration). Default: 10 seconds. With inotify the watched directories report new files at once and this
    /// is only a safety net.
    public var discoveryInterval: Duration

    /// Longest line sent, in bytes (YAML key `max_line_bytes`, an integer). Default: 65536. A longer line is cut
    /// to this many bytes and its record gets the field `truncated` with the original length in bytes; the rest
    /// of the line is skipped, not sent as another record. Also caps a multi-line record. Values below 1 count
    /// as 1.
    public var maxLineBytes: Int

    /// How long a last line without a terminating `\n` may stay unchanged before it is sent as it is (YAML key
    /// `partial_line_timeout`, a duration). Default: 1 second. Bytes of that line written later form a new
    /// record.
    public var partialLineTimeout: Duration

    /// Regular expression that the first line of a record matches (YAML key `multiline.start_pattern`, a
    /// string). Default: none, every line is a record. When set, a line that does not match (anywhere; anchor
    /// with `^`) is appended, after a `\n`, to the record before it: stack traces, wrapped messages.
    /// Check a pattern with `TailConfig.validateRegex(_:)`.
    public var multilineStartPattern: String?

    /// How long a multi-line record waits for a further continuation line before it is sent (YAML key
    /// `multiline.timeout`, a duration). Default: 1 second.
    public var multilineTimeout: Duration

    /// How often the acknowledged offsets are written to the checkpoint file (YAML key `checkpoint_interval`, a
    /// duration). Default: 1 second; while they moved less than 1 MiB since the last write, every 30 intervals
    /// (`CheckpointSchedule`). They are written once more at shutdown. The file is
    /// `<agent.state_dir>/tail/<source name>.checkpoints` (with `.checkpoints.changes` beside it when only a few of
    /// many files moved); without a state directory checkpoints are kept in memory only.
    public var checkpointInterval: Duration

    /// Glob patterns (the `paths` syntax) that the real path of every file must match when it is opened, its symbolic
    /// links resolved; nil: no check. Not a YAML key: the agent sets it on the `tail` sources of a remote configuration
    /// document, to `remote_config.allow.tail_paths`. A file whose real path is outside them is not opened (it is
    /// closed again at once): the source logs a warning once per path and counts it. Default: nil.
    public var allowedRealPaths: [String]?

    /// The defaults listed with each property (no paths: the decoder requires at least one).
    public init() {
        paths = []
        exclude = []
        startAt = .end
        watch = .auto
        pollInterval = .milliseconds(250)
        discoveryInterval = .seconds(10)
        maxLineBytes = 65536
        partialLineTimeout = .seconds(1)
        multilineStartPattern = nil
        multilineTimeout = .seconds(1)
        checkpointInterval = .seconds(1)
        allowedRealPaths = nil
    }

    /// Checks a `multiline.start_pattern`: returns a message describing why it is not a valid regular expression,
    /// or nil when it is.
    public static func validateRegex(_ pattern: String) -> String? {
        do {
            _ = try Regex(pattern)
            return nil
        } catch {
            return "invalid regular expression \"\(pattern)\": \(error)"
        }
    }
}
