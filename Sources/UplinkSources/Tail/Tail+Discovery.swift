import UplinkCore
import UplinkFiles

/// When a `tail` source looks for the files its globs match, and what it remembers between looks: a full look
/// (every glob expanded) is due every `discovery_interval` or when asked for (inotify lost events, a followed file
/// left its path); with inotify a due look is skipped while no watched directory changed; and a path with nothing
/// there stays watched for a while after a look last found it empty, then is given up.
///
/// The engine does what a look finds (follows the files, watches the directories, reports health); this type only
/// decides and remembers, on the clock it is given, so its tests move time instead of waiting.
struct TailDiscovery {
    let globs: [TailGlob]
    let exclude: TailExclude
    /// `discovery_interval` (at least 1 ms).
    let interval: Duration
    /// A path with nothing there stays watched at least this long (`missingPathKept`), or two intervals if longer.
    let missingKept: Duration

    /// A look was asked for: the next turn makes one.
    private(set) var requested = false
    /// When the next look is due.
    private(set) var next: ContinuousClock.Instant
    /// Looks finished so far (a file detached during look N is closed once a later look showed where it went).
    private(set) var count = 0
    /// The modification times of the directories the last look read, and when they were read (wall clock, ns);
    /// nil: missing.
    private var directoryTimes: [String: (modified: Int64, readAt: Int64)?] = [:]
    /// Watched paths with nothing there, since when.
    private var missingSince: [String: ContinuousClock.Instant] = [:]

    /// How long a path with nothing there stays watched at least.
    static let missingPathKept: Duration = .seconds(60)

    init(config: TailConfig, now: ContinuousClock.Instant) {
        globs = config.paths.map(TailGlob.init)
        exclude = TailExclude(config.exclude)
        interval = max(config.discoveryInterval, .milliseconds(1))
        missingKept = max(Self.missingPathKept, config.discoveryInterval * 2)
        next = now
    }

    /// Whether `path` (as an expansion would spell it) is one the source follows.
    func matches(_ path: String) -> Bool {
        TailGlob.matches(path, globs, exclude: exclude)
    }

    /// Asks for a look at the next turn.
    mutating func request() { requested = true }

    /// Whether a look is due at `now`.
    func isDue(now: ContinuousClock.Instant) -> Bool { requested || now >= next }

    /// A due look that is not needed (nothing changed that it would see): the next one is an interval from now.
    mutating func skip(now: ContinuousClock.Instant) {
        next = now.advanced(by: interval)
    }

    /// Starts a look: expands the globs and reads the modification times of the directories it went through. The
    /// engine follows what it found, then calls `finishLook`.
    mutating func look(now: ContinuousClock.Instant) -> TailGlob.Expansion {
        requested = false
        next = now.advanced(by: interval)
        let expansion = TailGlob.expand(globs, exclude: exclude)
        directoryTimes = [:]
        let wallNow = WallClock.nowNanoseconds()
        for directory in expansion.directories {
            directoryTimes[directory] = FileStatus(path: directory).map { ($0.modified, wallNow) }
        }
        return expansion
    }

    /// Whether every directory the last look read is unchanged since (modification time, which creating, renaming
    /// or deleting an entry sets). A time within 1 s of its reading is not trusted (a change in the same clock tick
    /// would not show).
    func directoriesUnchanged() -> Bool {
        guard !directoryTimes.isEmpty else { return false }
        for (directory, recorded) in directoryTimes {
            guard let recorded, recorded.modified < recorded.readAt - 1_000_000_000,
                FileStatus(path: directory)?.modified == recorded.modified
            else { return false }
        }
        return true
    }

    /// Ends a look (counts it) and returns, of the `watched` paths, those to stop watching: the look found nothing
    /// there (not in `found`, not `followed`) and neither did the looks of the last `missingKept`. A rotation may be
    /// under way and its next file come soon, and inotify reports only files renamed away from watched paths, so a
    /// path is not given up at the first empty look.
    mutating func finishLook(
        watched: some Sequence<String>, found: Set<String>, followed: (String) -> Bool, now: ContinuousClock.Instant
    ) -> [String] {
        count += 1
        var forget: [String] = []
        for path in watched {
            if found.contains(path) || followed(path) {
                missingSince[path] = nil
            } else if let since = missingSince[path] {
                if since.advanced(by: missingKept) <= now {
                    forget.append(path)
                    missingSince[path] = nil
                }
            } else {
                missingSince[path] = now
            }
        }
        return forget
    }
}
