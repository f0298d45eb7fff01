import CLinuxIO
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if canImport(Glibc) || canImport(Musl)

/// inotify for the tailer: one instance watches directories (files created, renamed, deleted: the opener looks at
/// the paths named, and the engine checks whether they match `paths`), another modifications: of the open files
/// (through `/proc/self/fd`, new data: the reader is woken) and, by name, of the files in the watched directories,
/// which is how a followed file kept closed ("parked", read to its end and quiet) is noticed to grow without a
/// descriptor or a watch of its own. A thread of its own waits in `epoll_wait(2)` on both and on a control pipe
/// (which only says "stop").
///
/// Every event names what changed, so the engine's work per event is proportional to it: a write to one of
/// 10,000 followed files opens and reads that one. A full look (every path, the globs expanded) is only asked for
/// when inotify lost events (queue overflow) or a watched directory itself changed.
///
/// Modification events are only read while the reader is idle ("armed"): a busy reader is not woken for every
/// `write(2)` of a busy file, the kernel coalesces them meanwhile. The modification instance is watched one-shot
/// (`EPOLLONESHOT`): a report disarms it, and the reader arms it again with `epoll_ctl` from its own thread before
/// it goes idle, which wakes nobody (a control byte per idle turn would wake this thread once more per line).
/// Modifications of files that are neither open nor parked are read and dropped without waking the reader.
final class TailInotify: Sendable {
    private let directoryFD: Int32
    private let modifyFD: Int32
    /// The thread waits here for the three descriptors, told apart by `WaitTag`.
    private let epollFD: Int32
    private let controlRead: Int32
    private let controlWrite: Int32
    private let opener: TailOpener
    private let wakeup: SourceWakeup

    private struct State {
        var directories: [String: Int32] = [:]
        var directoryOfWatch: [Int32: String] = [:]
        /// The same directories in the modification instance.
        var modifyDirectories: [String: Int32] = [:]
        var modifyDirectoryOfWatch: [Int32: String] = [:]
        /// A full discovery is needed (events were lost, a directory was created, moved or deleted).
        var discoveryRequested = false
        /// Paths named by directory events since the engine last took them.
        var changedPaths: Set<String> = []
        /// Followed files kept closed; a modification of one is reported in `modifiedPaths`.
        var parkedPaths: Set<String> = []
        var modifiedPaths: Set<String> = []
        /// Modification events were lost: every parked file must be looked at.
        var modificationsLost = false
    }
    /// More named paths than this waiting for the engine count as lost events (a full look instead).
    private static let maximumQueuedPaths = 65_536
    private let state = Mutex(State())
    private let exited = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)

    /// Directory events that can change which files match or are at a followed path.
    private static let directoryMask = UInt32(IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
        | UInt32(IN_ONLYDIR)
    /// Modifications of the files in a directory, by name.
    private static let modifyDirectoryMask = UInt32(IN_MODIFY) | UInt32(IN_ONLYDIR)

    /// Creates both instances; fails with the `errno` of `inotify_init1` (e.g. `EMFILE`: the per-user limit).
    static func make(opener: TailOpener, wakeup: SourceWakeup) -> Result<TailInotify, SourceFiles.Errno> {
        let flags = Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC)
        let directoryFD = inotify_init1(flags)
        guard directoryFD >= 0 else { return .failure(SourceFiles.Errno(errno)) }
        let modifyFD = inotify_init1(flags)
        guard modifyFD >= 0 else {
            let error = SourceFiles.Errno(errno)
            close(directoryFD)
            return .failure(error)
        }
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            let error = SourceFiles.Errno(errno)
            close(directoryFD)
            close(modifyFD)
            return .failure(error)
        }
        for fd in pipeFDs {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        let epollFD = uplink_epoll_create()
        guard epollFD >= 0,
            uplink_epoll_add(epollFD, pipeFDs[0], WaitTag.control.rawValue, 0) == 0,
            uplink_epoll_add(epollFD, directoryFD, WaitTag.directories.rawValue, 0) == 0,
            uplink_epoll_add(epollFD, modifyFD, WaitTag.modifications.rawValue, 1) == 0
        else {
            let error = SourceFiles.Errno(errno)
            for fd in [directoryFD, modifyFD, pipeFDs[0], pipeFDs[1], epollFD] where fd >= 0 { close(fd) }
            return .failure(error)
        }
        return .success(TailInotify(
            directoryFD: directoryFD, modifyFD: modifyFD, epollFD: epollFD, controlRead: pipeFDs[0],
            controlWrite: pipeFDs[1], opener: opener, wakeup: wakeup))
    }

    /// What an `epoll_wait` report is about.
    private enum WaitTag: UInt32 {
        case control, directories, modifications
    }

    private init(
        directoryFD: Int32, modifyFD: Int32, epollFD: Int32, controlRead: Int32, controlWrite: Int32,
        opener: TailOpener, wakeup: SourceWakeup
    ) {
        self.directoryFD = directoryFD
        self.modifyFD = modifyFD
        self.epollFD = epollFD
        self.controlRead = controlRead
        self.controlWrite = controlWrite
        self.opener = opener
        self.wakeup = wakeup
    }

    /// Starts the thread that waits for events.
    func start() {
        started.store(true, ordering: .sequentiallyConsistent)
        DispatchQueue(label: "uplink.tail.inotify").async { [self] in
            self.eventLoop()
            self.exited.store(true, ordering: .sequentiallyConsistent)
        }
    }

    // MARK: Watches

    /// Watches exactly `directories` (adding new ones, removing others). Returns the `errno` of the first watch
    /// that could not be added for a reason other than the directory having gone (`ENOSPC`: the watch limit).
    func watch(directories: Set<String>) -> SourceFiles.Errno? {
        state.withLock { state in
            var failure: SourceFiles.Errno?
            for (directory, descriptor) in state.directories where !directories.contains(directory) {
                inotify_rm_watch(directoryFD, descriptor)
                state.directories[directory] = nil
                state.directoryOfWatch[descriptor] = nil
            }
            for (directory, descriptor) in state.modifyDirectories where !directories.contains(directory) {
                inotify_rm_watch(modifyFD, descriptor)
                state.modifyDirectories[directory] = nil
                state.modifyDirectoryOfWatch[descriptor] = nil
            }
            for directory in directories where state.directories[directory] == nil || state.modifyDirectories[directory] == nil {
                if state.directories[directory] == nil {
                    let descriptor = inotify_add_watch(directoryFD, directory, Self.directoryMask)
                    if descriptor >= 0 {
                        state.directories[directory] = descriptor
                        state.directoryOfWatch[descriptor] = directory
                    } else {
                        if errno != ENOENT, errno != ENOTDIR, errno != EACCES { failure = failure ?? SourceFiles.Errno(errno) }
                        continue
                    }
                }
                let descriptor = inotify_add_watch(modifyFD, directory, Self.modifyDirectoryMask)
                if descriptor >= 0 {
                    state.modifyDirectories[directory] = descriptor
                    state.modifyDirectoryOfWatch[descriptor] = directory
                } else if errno != ENOENT, errno != ENOTDIR, errno != EACCES {
                    failure = failure ?? SourceFiles.Errno(errno)
                }
            }
            return failure
        }
    }

    /// Watches an open file for modifications (through `/proc/self/fd`, so it is this very file even if it was
    /// renamed). Returns the watch descriptor, or the `errno`.
    func watchModifications(of descriptor: Int32) -> Result<Int32, SourceFiles.Errno> {
        let watch = inotify_add_watch(modifyFD, "/proc/self/fd/\(descriptor)", UInt32(IN_MODIFY))
        return watch >= 0 ? .success(watch) : .failure(SourceFiles.Errno(errno))
    }

    func unwatchModifications(_ watch: Int32) {
        inotify_rm_watch(modifyFD, watch)
    }

    /// What directory events reported since the last call (then clears it): the paths they named, and whether a
    /// full discovery is needed.
    func takeDirectoryChanges() -> (paths: Set<String>, full: Bool) {
        state.withLock { state in
            defer {
                state.discoveryRequested = false
                state.changedPaths = []
            }
            return (state.changedPaths, state.discoveryRequested)
        }
    }

    /// Parked files modified since the last call (then clears it), and whether modification events were lost.
    func takeModifiedParked() -> (paths: Set<String>, lost: Bool) {
        state.withLock { state in
            defer {
                state.modifiedPaths = []
                state.modificationsLost = false
            }
            return (state.modifiedPaths, state.modificationsLost)
        }
    }

    /// Reports modifications of the file at `path` by name from now on (it was closed) or no longer.
    func setParked(_ path: String, _ parked: Bool) {
        state.withLock { state in
            if parked {
                state.parkedPaths.insert(path)
            } else {
                state.parkedPaths.remove(path)
                state.modifiedPaths.remove(path)
            }
        }
    }

    /// Lets the thread report the next modification (call before going idle). Wakes the thread only if one is
    /// waiting to be read already.
    func arm() {
        _ = uplink_epoll_rearm(epollFD, modifyFD, WaitTag.modifications.rawValue)
    }

    /// Stops the thread (waiting up to a second for it) and closes the instances.
    func stop() async {
        var byte = UInt8(ascii: "q")
        _ = write(controlWrite, &byte, 1)
        if started.load(ordering: .sequentiallyConsistent) {
            for _ in 0..<1000 where !exited.load(ordering: .sequentiallyConsistent) {
                // Not cancellable: the thread must be gone before its descriptors are closed.
                let clock = ContinuousClock()
                let until = clock.now.advanced(by: .milliseconds(1))
                while clock.now < until { await Task.yield() }
            }
            // A thread still polling (never seen) keeps its descriptors: closing them under it could hit reused ones.
            guard exited.load(ordering: .sequentiallyConsistent) else { return }
        }
        close(epollFD)
        close(directoryFD)
        close(modifyFD)
        close(controlRead)
        close(controlWrite)
    }

    // MARK: The thread

    /// Renames seen (`IN_MOVED_FROM`) of followed paths, by cookie, until their `IN_MOVED_TO` arrives.
    struct PendingMoves {
        var sources: [UInt32: String] = [:]
        var order: [UInt32] = []

        mutating func add(_ cookie: UInt32, _ path: String) {
            sources[cookie] = path
            order.append(cookie)
            if order.count > 256 {
                for old in order.prefix(order.count - 256) { sources[old] = nil }
                order.removeFirst(order.count - 256)
            }
        }
    }

    /// One event of an inotify read buffer.
    private struct Event {
        var watch: Int32
        var mask: UInt32
        var cookie: UInt32
        var name: String?
    }

    private static func forEachEvent(_ events: UnsafeRawBufferPointer, _ body: (Event) -> Void) {
        let header = MemoryLayout<inotify_event>.size
        var offset = 0
        while offset + header <= events.count {
            let watch = events.loadUnaligned(fromByteOffset: offset, as: Int32.self)
            let mask = events.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let cookie = events.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            let nameLength = Int(events.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            let nameEnd = min(events.count, offset + header + nameLength)
            var name: String?
            if nameLength > 0 {
                let raw = events[(offset + header)..<nameEnd]
                name = String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            body(Event(watch: watch, mask: mask, cookie: cookie, name: name))
            offset += header + nameLength
        }
    }

    /// Goes through directory events in order: notes the paths they name (or that a full look is needed), and
    /// hands a followed file renamed away to the opener under its new name (in case it was never opened).
    /// Returns the paths named, nil when a full look is needed.
    private func handleDirectoryEvents(_ events: UnsafeRawBufferPointer, _ moves: inout PendingMoves) -> Set<String>? {
        var paths: Set<String>? = []
        Self.forEachEvent(events) { event in
            let structural = UInt32(IN_Q_OVERFLOW | IN_DELETE_SELF | IN_MOVE_SELF) | UInt32(IN_ISDIR)
            if event.mask & structural != 0 { paths = nil }
            guard let name = event.name, let directory = state.withLock({ $0.directoryOfWatch[event.watch] }) else { return }
            let path = TailGlob.path(of: name, in: directory)
            paths?.insert(path)
            guard event.mask & UInt32(IN_MOVED_FROM | IN_MOVED_TO) != 0 else { return }
            if event.mask & UInt32(IN_MOVED_FROM) != 0 {
                if opener.isTracked(path) { moves.add(event.cookie, path) }
            } else if let source = moves.sources.removeValue(forKey: event.cookie) {
                opener.renamed(from: source, to: path)
            }
        }
        return paths
    }

    /// Goes through modification events: returns whether one concerns an open file (a watch of its own) or a
    /// parked one (noted in `modifiedPaths`); events about other files in the watched directories are dropped.
    private func handleModifyEvents(_ events: UnsafeRawBufferPointer) -> Bool {
        var relevant = false
        state.withLock { state in
            Self.forEachEvent(events) { event in
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    state.modificationsLost = true
                    relevant = true
                    return
                }
                guard let name = event.name, let directory = state.modifyDirectoryOfWatch[event.watch] else {
                    if event.mask & UInt32(IN_MODIFY) != 0 { relevant = true }  // an open file's own watch
                    return
                }
                let path = TailGlob.path(of: name, in: directory)
                guard state.parkedPaths.contains(path) else { return }
                relevant = true
                if state.modifiedPaths.count < Self.maximumQueuedPaths {
                    state.modifiedPaths.insert(path)
                } else {
                    state.modificationsLost = true
                }
            }
        }
        return relevant
    }

    private func eventLoop() {
        var moves = PendingMoves()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        var tags = [UInt32](repeating: 0, count: 3)
        while true {
            let ready = tags.withUnsafeMutableBufferPointer { uplink_epoll_wait(epollFD, $0.baseAddress, 3, -1) }
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            for index in 0..<Int(ready) {
                switch WaitTag(rawValue: tags[index]) {
                case nil:
                    continue
                case .control:
                    while true {
                        let count = read(controlRead, buffer.baseAddress, buffer.count)
                        if count <= 0 { break }
                        if UnsafeRawBufferPointer(rebasing: buffer[0..<count]).contains(UInt8(ascii: "q")) { return }
                    }
                case .directories:
                    var changed: Set<String>? = []
                    while true {
                        let count = read(directoryFD, buffer.baseAddress, buffer.count)
                        if count <= 0 { break }
                        let paths = handleDirectoryEvents(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), &moves)
                        if let paths, changed != nil { changed!.formUnion(paths) } else { changed = nil }
                    }
                    state.withLock { state in
                        if let changed, state.changedPaths.count + changed.count <= Self.maximumQueuedPaths {
                            state.changedPaths.formUnion(changed)
                        } else {
                            state.discoveryRequested = true
                        }
                    }
                    if let changed { opener.scan(changed) } else { opener.scan() }
                    wakeup.signal()
                case .modifications:
                    // The report disarmed the watch: it stays so until the reader, done with what it was woken
                    // for, arms it again.
                    var relevant = false
                    while true {
                        let count = read(modifyFD, buffer.baseAddress, buffer.count)
                        if count <= 0 { break }
                        if handleModifyEvents(UnsafeRawBufferPointer(rebasing: buffer[0..<count])) { relevant = true }
                    }
                    if relevant {
                        wakeup.signal()
                    } else {
                        arm()
                    }
                }
            }
        }
    }
}

#endif
