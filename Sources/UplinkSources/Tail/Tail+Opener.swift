import Synchronization
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Keeps an eye on the followed paths and opens every new file that appears at one of them at once, so that a file
/// rotated away again before the reader gets to it (the reader may be waiting for buffer space) is still held
/// open and read. Called from the reader's task, the polling task and inotify's handlers (on the send path's loop).
final class TailOpener: Sendable {
    /// A file opened at a path: its descriptor and what `fstat` said about it.
    struct Opened: Sendable {
        var descriptor: Int32
        var status: FileStatus
    }

    /// What happened at a path, in order.
    enum Event: Sendable {
        /// A new file is at the path (already open).
        case opened(Opened)
        /// Nothing is at the path any more.
        case vanished
        /// A file is at the path but cannot be opened.
        case failed(SourceFiles.Errno)
    }

    private struct PathState {
        /// The file last seen at the path (nil: nothing, or one that could not be opened).
        var current: FileIdentity?
        var failedInode: FileIdentity?
        var events: [Event] = []
        var pendingOpened = 0
        /// Files opened at the path lately, so one seen again under its rotated name is not taken for a new one.
        var recent: [FileIdentity] = []

        mutating func remember(_ inode: FileIdentity) {
            recent.append(inode)
            if recent.count > 64 { recent.removeFirst(recent.count - 64) }
        }
    }

    private struct State {
        var paths: [String: PathState] = [:]
        var skipped = 0
        /// Real paths of files refused by `allowedRealPaths`, by the path they were opened at, until taken.
        var refused: [String: String] = [:]
        /// Paths whose `events` are not empty, so taking them does not visit every watched path.
        var eventful: Set<String> = []

        mutating func append(_ event: Event, at path: String, to pathState: inout PathState) {
            pathState.events.append(event)
            eventful.insert(path)
        }
    }

    /// Most files held open at one path for the reader; beyond it new ones are skipped (and counted): a quarter
    /// of the descriptor limit (`RLIMIT_NOFILE`), from 16 to 1024.
    static let maximumPendingPerPath: Int = {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 256 }
        let soft = limit.rlim_cur >= UInt64(Int32.max) ? 4096 : Int(limit.rlim_cur)
        return min(1024, max(16, soft / 4))
    }()

    private let state = Mutex(State())
    /// The patterns every opened file's real path must match (`TailConfig.allowedRealPaths`); nil: no check.
    private let allowedRealPaths: [TailGlob]?

    init(allowedRealPaths: [TailGlob]? = nil) {
        self.allowedRealPaths = allowedRealPaths
    }

    /// Starts watching `path` and opens the file there now. Fails when it is missing, not a regular file or
    /// cannot be opened; the path is then not watched. Returns nil when the path is watched already (what happens
    /// there comes as events).
    func track(_ path: String) -> Result<Opened, SourceFiles.Errno>? {
        state.withLock { state in
            if state.paths[path] != nil { return nil }
            switch Self.open(path, allowed: allowedRealPaths, &state) {
            case .failure(let error):
                return .failure(error)
            case .success(let opened):
                var pathState = state.paths[path] ?? PathState()
                pathState.current = opened.status.identity
                pathState.remember(opened.status.identity)
                state.paths[path] = pathState
                return .success(opened)
            }
        }
    }

    /// Stops watching `path`, closing files opened there that the reader has not taken.
    func untrack(_ path: String) {
        let events = state.withLock { $0.paths.removeValue(forKey: path)?.events ?? [] }
        Self.close(events)
    }

    /// Stops watching `path` if nothing is there and no event waits to be taken.
    func untrackIfIdle(_ path: String) {
        state.withLock { state in
            guard let pathState = state.paths[path], pathState.events.isEmpty, pathState.current == nil else { return }
            state.paths[path] = nil
        }
    }

    var trackedPaths: Set<String> {
        state.withLock { Set($0.paths.keys) }
    }

    /// Looks at every watched path once; returns whether anything new happened.
    @discardableResult
    func scan() -> Bool {
        state.withLock { state in
            var changed = false
            for path in Array(state.paths.keys) where Self.look(at: path, allowed: allowedRealPaths, &state) { changed = true }
            return changed
        }
    }

    /// Looks at those of `paths` that are watched (inotify named them); returns whether anything new happened.
    @discardableResult
    func scan<Paths: Sequence<String>>(_ paths: Paths) -> Bool {
        state.withLock { state in
            var changed = false
            for path in paths where state.paths[path] != nil && Self.look(at: path, allowed: allowedRealPaths, &state) {
                changed = true
            }
            return changed
        }
    }

    /// Compares the file at the watched `path` with the one last seen there; queues an event when it changed.
    private static func look(at path: String, allowed: [TailGlob]?, _ state: inout State) -> Bool {
        guard var pathState = state.paths[path] else { return false }
        defer { state.paths[path] = pathState }
        guard let status = FileStatus(path: path), status.isRegular else {
            if pathState.current != nil || pathState.failedInode != nil {
                pathState.current = nil
                pathState.failedInode = nil
                state.append(.vanished, at: path, to: &pathState)
                return true
            }
            return false
        }
        if status.identity == pathState.current { return false }
        if pathState.pendingOpened >= maximumPendingPerPath {
            state.skipped += 1
            return false
        }
        switch open(path, allowed: allowed, &state) {
        case .success(let opened):
            if opened.status.identity == pathState.current {
                // Replaced again between stat and open, by the file we already have.
                SourceFiles.closeDescriptor(opened.descriptor)
                return false
            }
            pathState.current = opened.status.identity
            pathState.remember(opened.status.identity)
            pathState.failedInode = nil
            pathState.pendingOpened += 1
            state.append(.opened(opened), at: path, to: &pathState)
        case .failure(let error):
            // Reported once per file; opening is retried on every scan (permissions may change).
            if error.code == ENOENT || status.identity == pathState.failedInode { return false }
            pathState.current = nil
            pathState.failedInode = status.identity
            state.append(.failed(error), at: path, to: &pathState)
        }
        return true
    }

    /// Whether `path` is watched.
    func isTracked(_ path: String) -> Bool {
        state.withLock { $0.paths[path] != nil }
    }

    /// inotify saw the file at the watched path `path` renamed to `target`. If that file was never opened (it was
    /// created and rotated away between two looks), it is opened under its new name and reported as the next file
    /// of `path`, so its lines are not lost. Returns whether it was.
    @discardableResult
    func renamed(from path: String, to target: String) -> Bool {
        state.withLock { state in
            guard var pathState = state.paths[path], pathState.pendingOpened < Self.maximumPendingPerPath,
                case .success(let opened) = Self.open(target, allowed: allowedRealPaths, &state)
            else { return false }
            let inode = opened.status.identity
            if inode == pathState.current || pathState.recent.contains(inode) {
                SourceFiles.closeDescriptor(opened.descriptor)
                return false
            }
            pathState.remember(inode)
            pathState.pendingOpened += 1
            state.append(.opened(opened), at: path, to: &pathState)
            state.paths[path] = pathState
            return true
        }
    }

    /// Whether events wait to be taken.
    var hasEvents: Bool { state.withLock { !$0.eventful.isEmpty } }

    /// Takes the events of every path.
    func takeEvents() -> [(path: String, events: [Event])] {
        state.withLock { state in
            var taken: [(String, [Event])] = []
            for path in state.eventful {
                guard let pathState = state.paths[path], !pathState.events.isEmpty else { continue }
                taken.append((path, pathState.events))
                state.paths[path]?.events = []
                state.paths[path]?.pendingOpened = 0
            }
            state.eventful = []
            return taken
        }
    }

    /// The real path of the file refused at `path` because it is outside `allowedRealPaths`, if the last failure to
    /// open there was that; taking it forgets it.
    func takeRefusal(at path: String) -> String? {
        state.withLock { $0.refused.removeValue(forKey: path) }
    }

    /// How many new files were not opened because too many were waiting at their path.
    var skipped: Int { state.withLock { $0.skipped } }

    /// Closes every file not taken and forgets all paths.
    func closeAll() {
        let events = state.withLock { state in
            let events = state.paths.values.flatMap(\.events)
            state.paths = [:]
            state.eventful = []
            return events
        }
        Self.close(events)
    }

    private static func close(_ events: [Event]) {
        for case .opened(let opened) in events { SourceFiles.closeDescriptor(opened.descriptor) }
    }

    /// Opens the regular file at `path`. With `allowed`, the real path of what was opened (read back from the
    /// descriptor, so a symbolic link swapped in between cannot pass) must match one of the patterns; otherwise the
    /// file is closed, its real path noted in `state.refused`, and the result is `EACCES`.
    private static func open(_ path: String, allowed: [TailGlob]?, _ state: inout State) -> Result<Opened, SourceFiles.Errno> {
        switch SourceFiles.openForReading(path) {
        case .failure(let error):
            return .failure(error)
        case .success(let descriptor):
            guard let status = FileStatus(descriptor: descriptor), status.isRegular else {
                SourceFiles.closeDescriptor(descriptor)
                return .failure(SourceFiles.Errno(EINVAL))
            }
            if let refusal = refusal(descriptor: descriptor, path: path, inode: status.identity, allowed: allowed) {
                SourceFiles.closeDescriptor(descriptor)
                state.refused[path] = refusal
                return .failure(SourceFiles.Errno(EACCES))
            }
            return .success(Opened(descriptor: descriptor, status: status))
        }
    }

    /// Whether the file open as `descriptor` (opened at `path`, with `inode`) may be read: always without
    /// `allowedRealPaths`, else when its real path matches one of them.
    func allows(descriptor: Int32, path: String, inode: FileIdentity) -> Bool {
        Self.refusal(descriptor: descriptor, path: path, inode: inode, allowed: allowedRealPaths) == nil
    }

    /// The real path of a file that `allowed` refuses (`(unknown)` when it cannot be told), or nil when it may be read.
    private static func refusal(descriptor: Int32, path: String, inode: FileIdentity, allowed: [TailGlob]?) -> String? {
        guard let allowed else { return nil }
        guard let real = TailFS.realPath(descriptor: descriptor, openedAt: path, inode: inode) else { return "(unknown)" }
        return allowed.contains(where: { $0.matches(real) }) ? nil : real
    }
}
