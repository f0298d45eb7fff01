import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if canImport(Glibc) || canImport(Musl)

/// inotify for the tailer: one instance watches directories (files created, renamed, deleted: the opener looks at
/// the followed paths and a discovery is requested), another the followed files' modifications (new data: the
/// reader is woken). A thread of its own blocks in `poll(2)` on both and on a control pipe.
///
/// Modification events are only read while the reader is idle ("armed"): a busy reader is not woken for every
/// `write(2)` of a busy file, the kernel coalesces them meanwhile.
final class TailInotify: Sendable {
    private let directoryFD: Int32
    private let modifyFD: Int32
    private let controlRead: Int32
    private let controlWrite: Int32
    private let opener: TailOpener
    private let wakeup: TailWakeup

    private struct State {
        var directories: [String: Int32] = [:]
        var directoryOfWatch: [Int32: String] = [:]
        var discoveryRequested = false
    }
    private let state = Mutex(State())
    private let exited = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)

    /// Directory events that can change which files match or are at a followed path.
    private static let directoryMask = UInt32(IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
        | UInt32(IN_ONLYDIR)

    /// Creates both instances; fails with the `errno` of `inotify_init1` (e.g. `EMFILE`: the per-user limit).
    static func make(opener: TailOpener, wakeup: TailWakeup) -> Result<TailInotify, TailFS.Errno> {
        let flags = Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC)
        let directoryFD = inotify_init1(flags)
        guard directoryFD >= 0 else { return .failure(TailFS.Errno(errno)) }
        let modifyFD = inotify_init1(flags)
        guard modifyFD >= 0 else {
            let error = TailFS.Errno(errno)
            close(directoryFD)
            return .failure(error)
        }
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            let error = TailFS.Errno(errno)
            close(directoryFD)
            close(modifyFD)
            return .failure(error)
        }
        for fd in pipeFDs {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        return .success(TailInotify(
            directoryFD: directoryFD, modifyFD: modifyFD, controlRead: pipeFDs[0], controlWrite: pipeFDs[1],
            opener: opener, wakeup: wakeup))
    }

    private init(
        directoryFD: Int32, modifyFD: Int32, controlRead: Int32, controlWrite: Int32, opener: TailOpener,
        wakeup: TailWakeup
    ) {
        self.directoryFD = directoryFD
        self.modifyFD = modifyFD
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
    func watch(directories: Set<String>) -> TailFS.Errno? {
        state.withLock { state in
            var failure: TailFS.Errno?
            for (directory, descriptor) in state.directories where !directories.contains(directory) {
                inotify_rm_watch(directoryFD, descriptor)
                state.directories[directory] = nil
                state.directoryOfWatch[descriptor] = nil
            }
            for directory in directories where state.directories[directory] == nil {
                let descriptor = inotify_add_watch(directoryFD, directory, Self.directoryMask)
                if descriptor >= 0 {
                    state.directories[directory] = descriptor
                    state.directoryOfWatch[descriptor] = directory
                } else if errno != ENOENT, errno != ENOTDIR, errno != EACCES {
                    failure = failure ?? TailFS.Errno(errno)
                }
            }
            return failure
        }
    }

    /// Watches an open file for modifications (through `/proc/self/fd`, so it is this very file even if it was
    /// renamed). Returns the watch descriptor, or the `errno`.
    func watchModifications(of descriptor: Int32) -> Result<Int32, TailFS.Errno> {
        let watch = inotify_add_watch(modifyFD, "/proc/self/fd/\(descriptor)", UInt32(IN_MODIFY))
        return watch >= 0 ? .success(watch) : .failure(TailFS.Errno(errno))
    }

    func unwatchModifications(_ watch: Int32) {
        inotify_rm_watch(modifyFD, watch)
    }

    /// Whether directory events asked for a discovery since the last call (then clears it).
    func takeDiscoveryRequest() -> Bool {
        state.withLock { state in
            defer { state.discoveryRequested = false }
            return state.discoveryRequested
        }
    }

    /// Lets the thread report the next modification (call before going idle).
    func arm() {
        var byte = UInt8(ascii: "a")
        _ = write(controlWrite, &byte, 1)
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

    /// Goes through directory events in order: a followed file renamed away is handed to the opener under its new
    /// name (in case it was never opened).
    private func handleDirectoryEvents(_ events: UnsafeRawBufferPointer, _ moves: inout PendingMoves) {
        let header = MemoryLayout<inotify_event>.size
        var offset = 0
        while offset + header <= events.count {
            let watch = events.loadUnaligned(fromByteOffset: offset, as: Int32.self)
            let mask = events.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let cookie = events.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            let nameLength = Int(events.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            let nameEnd = min(events.count, offset + header + nameLength)
            defer { offset += header + nameLength }
            guard mask & UInt32(IN_MOVED_FROM | IN_MOVED_TO) != 0, nameLength > 0,
                let directory = state.withLock({ $0.directoryOfWatch[watch] })
            else { continue }
            let raw = events[(offset + header)..<nameEnd]
            let name = String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            let path = joinPath(directory, name)
            if mask & UInt32(IN_MOVED_FROM) != 0 {
                if opener.isTracked(path) { moves.add(cookie, path) }
            } else if let source = moves.sources.removeValue(forKey: cookie) {
                opener.renamed(from: source, to: path)
            }
        }
    }

    private func eventLoop() {
        var armed = true
        var moves = PendingMoves()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            var fds = [
                pollfd(fd: controlRead, events: Int16(POLLIN), revents: 0),
                pollfd(fd: directoryFD, events: Int16(POLLIN), revents: 0),
                pollfd(fd: armed ? modifyFD : -1, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, nfds_t(fds.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if fds[0].revents != 0 {
                while true {
                    let count = read(controlRead, buffer.baseAddress, buffer.count)
                    if count <= 0 { break }
                    for byte in UnsafeRawBufferPointer(rebasing: buffer[0..<count]) {
                        if byte == UInt8(ascii: "q") { return }
                        armed = true
                    }
                }
            }
            if fds[1].revents != 0 {
                while true {
                    let count = read(directoryFD, buffer.baseAddress, buffer.count)
                    if count <= 0 { break }
                    handleDirectoryEvents(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), &moves)
                }
                state.withLock { $0.discoveryRequested = true }
                opener.scan()
                wakeup.signal()
            }
            if fds[2].revents != 0 {
                while read(modifyFD, buffer.baseAddress, buffer.count) > 0 {}
                armed = false
                wakeup.signal()
            }
        }
    }
}

#endif
