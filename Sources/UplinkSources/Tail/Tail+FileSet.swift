import UplinkFiles

/// The files a tail source follows and the ways it finds them: in the order they were opened (older incarnations of
/// a path before newer ones), by inode (those not closed), by the path each is at now, other names (hard links) of
/// followed files, and the list a turn reads. It keeps these views in step; what happens to a file (opening,
/// reading, parking, closing its descriptor) stays with the engine.
struct TailFileSet {
    /// Every followed file, in the order they were opened; closed ones stay until their lines are acknowledged.
    private(set) var all: [TailedFile] = []
    /// Followed files not closed, by inode.
    private var byInode: [FileIdentity: TailedFile] = [:]
    /// The file at each followed path (a detached or closed file is at none).
    private var byPath: [String: TailedFile] = [:]
    /// Paths that are another name (hard link) of a followed file.
    private var aliases: [String: FileIdentity] = [:]
    private var awakeFiles: [TailedFile] = []
    private var awakeIsStale = true
    /// Files were closed since closed and acknowledged ones were last removed.
    private var closedSinceCleanup = false

    /// The files a turn looks at: all but those parked at their paths, in `all`'s order. Rebuilt after
    /// `awakeChanged()` or a file was added, closed or removed.
    var awake: [TailedFile] {
        mutating get {
            if awakeIsStale {
                awakeFiles = all.filter { !$0.isParked || $0.isDetached }
                awakeIsStale = false
            }
            return awakeFiles
        }
    }

    /// A file was parked, unparked or detached: `awake` is built again.
    mutating func awakeChanged() {
        awakeIsStale = true
    }

    /// The followed, not closed file with this inode.
    func file(inode: FileIdentity) -> TailedFile? {
        byInode[inode]
    }

    /// The file at a followed path.
    func file(at path: String) -> TailedFile? {
        byPath[path]
    }

    /// Whether `file` is the one at its path.
    func isActive(_ file: TailedFile) -> Bool {
        byPath[file.path] === file
    }

    /// Follows a newly opened file, at its path and inode.
    mutating func add(_ file: TailedFile) {
        all.append(file)
        byInode[file.inode] = file
        byPath[file.path] = file
        awakeIsStale = true
    }

    /// `file` is at `file.path` now (moved there, or found again there).
    mutating func setActive(_ file: TailedFile) {
        byPath[file.path] = file
    }

    /// `file` is no longer at its path (renamed away, replaced or deleted there).
    mutating func vacate(_ file: TailedFile) {
        if byPath[file.path] === file { byPath[file.path] = nil }
    }

    /// `file`'s descriptor was closed for good: it is no longer found by inode; it stays in `all` until
    /// `removeClosedAndAcknowledged()` finds its lines acknowledged.
    mutating func closed(_ file: TailedFile) {
        if byInode[file.inode] === file { byInode[file.inode] = nil }
        closedSinceCleanup = true
        awakeIsStale = true
    }

    /// Forgets closed files whose lines are all acknowledged; true when it forgot any.
    mutating func removeClosedAndAcknowledged() -> Bool {
        guard closedSinceCleanup else { return false }
        let before = all.count
        all.removeAll { $0.isClosed && !$0.hasUnacknowledged }
        closedSinceCleanup = all.contains { $0.isClosed }
        guard all.count != before else { return false }
        awakeIsStale = true
        return true
    }

    /// Forgets every file (at the end; their descriptors are closed by then).
    mutating func removeAll() {
        self = TailFileSet()
    }

    /// The followed file's inode `path` is another name of, when `path` is known as one.
    func alias(at path: String) -> FileIdentity? {
        aliases[path]
    }

    /// Notes `path` as another name of the followed file with `inode` (nil: forgets it).
    mutating func setAlias(_ inode: FileIdentity?, at path: String) {
        aliases[path] = inode
    }
}

/// Where recently closed rotated files stood, so one found again later (renamed once more to a matching name)
/// continues there instead of being read again. Holds the newest `limit`; the oldest goes first.
struct TailRecentlyClosed {
    let limit: Int
    private var checkpoints: [FileIdentity: TailCheckpoint] = [:]
    private var order: [FileIdentity] = []

    init(limit: Int) {
        self.limit = limit
    }

    /// How many it holds.
    var count: Int { checkpoints.count }

    /// Keeps `checkpoint` (replacing one of the same inode), dropping the oldest past `limit`.
    mutating func remember(_ checkpoint: TailCheckpoint) {
        if checkpoints[checkpoint.inode] == nil { order.append(checkpoint.inode) }
        checkpoints[checkpoint.inode] = checkpoint
        guard order.count > limit else { return }
        let dropped = order.count - limit
        for inode in order.prefix(dropped) { checkpoints[inode] = nil }
        order.removeFirst(dropped)
    }

    /// The checkpoint of `inode`, taken out.
    mutating func take(_ inode: FileIdentity) -> TailCheckpoint? {
        guard let checkpoint = checkpoints.removeValue(forKey: inode) else { return nil }
        order.removeAll { $0 == inode }
        return checkpoint
    }
}
