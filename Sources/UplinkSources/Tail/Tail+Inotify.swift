import NIOCore
import NIOPosix
import Synchronization
import UplinkFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

#if canImport(Glibc) || canImport(Musl)

/// inotify for the tailer: one instance watches directories (files created, renamed, deleted: the opener looks at
/// the paths named, and the engine checks whether they match `paths`), another modifications: of the open files
/// (through `/proc/self/fd`, new data: the reader is woken) and, by name, of the files in the directories that hold
/// a followed file kept closed ("parked", read to its end and quiet), which is how a parked file is noticed to grow
/// without a descriptor or a watch of its own. A directory is watched for modifications only while it holds a parked
/// file: such a watch reports every write to every file in it, and a followed file beside a busy one (an app's log
/// beside syslog) would otherwise wake the loop for each of the neighbour's writes. Both instances are read as NIO channels on the send path's event loop `L`
/// (`SourceContext.eventLoop`), so a line's wake-up comes from the thread that also sends it: no thread of our own.
///
/// Every event names what changed, so the engine's work per event is proportional to it: a write to one of
/// 10,000 followed files opens and reads that one. A full look (every path, the globs expanded) is only asked for
/// when inotify lost events (queue overflow) or a watched directory itself changed.
///
/// Modification events are only read while the reader is idle ("armed"): a busy reader is not woken for every
/// `write(2)` of a busy file, the kernel coalesces them meanwhile. The modification channel does not read on its own
/// (`autoRead` off): a report that concerns the reader leaves it without a pending read (NIO stops polling it), and
/// the reader arms it with `arm()` (one `channel.read()`) before it goes idle. NIO polls channels level-triggered, so
/// a write that lands after the report was read and before the next `arm()` is reported as soon as it is armed.
/// While the reader waits idle with nothing to delay its next read (`uplink.linger` 0: `setReaderWaitingIdle`), a
/// report keeps the channel armed instead: the reader would arm it again right after its read anyway, and staying armed
/// spares NIO two `epoll_ctl`s per wake-up. When that reader's task runs on `L` too, the report does not wake it: the
/// handler reads the new lines in place (`TailInPlaceReader`), unless they need more than a read (see there).
/// Modifications of files that are neither open nor parked are read and dropped without waking the reader.
///
/// Starting costs no wait: `make` creates the instances at once (the engine adds its watches and looks at the paths
/// right after), and the channels are made on `L` meanwhile; the kernel queues events until they read them. (Waiting
/// for the channels before the first look delayed the tailer's start by two round trips to a busy loop; files
/// written and rotated away within that window were missed.)
///
/// Descriptors: each channel owns (and NIO closes, once, when the channel closes) a duplicate of its instance's
/// descriptor; the originals, through which watches are added and removed, belong to this object and are closed in
/// `deinit` only. So nothing here ever closes a descriptor NIO closes too, and a watch added or removed through this
/// object never reaches a number that was closed and given to something else (a closed and reused number is how a
/// double close takes down, say, the descriptor the process's timers wait on).
final class TailInotify: Sendable {
    private let directoryFD: Int32
    private let modifyFD: Int32
    private let opener: TailOpener
    private let wakeup: SourceWakeup
    /// Where both channels live.
    private let eventLoop: any EventLoop

    private struct State {
        var directories: [String: Int32] = [:]
        var directoryOfWatch: [Int32: String] = [:]
        /// The directories holding parked paths (how many each), watched for modifications in the other instance.
        var parkedInDirectory: [String: Int] = [:]
        var modifyWatchOfDirectory: [String: Int32] = [:]
        /// How many of those directories' names share each watch, and the name its events are resolved with.
        var modifyWatchUsers: [Int32: Int] = [:]
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
        /// A channel closed without `stop()` (a read failed): no more events come. Returned by the next `watch`
        /// call, so the engine falls back to polling as it does when a watch cannot be added.
        var broken: SourceFiles.Errno?
    }
    /// More named paths than this waiting for the engine count as lost events (a full look instead).
    private static let maximumQueuedPaths = 65_536
    private let state = Mutex(State())

    /// The two channels, as NIO makes them on `L` (nil after `stop()` took them).
    private struct Channels {
        var directories: EventLoopFuture<any Channel>?
        var modifications: EventLoopFuture<any Channel>?
        /// `stop()` began: a channel closing from now on is expected.
        var stopping = false
    }
    private let channels = Mutex(Channels())
    /// The modification channel has no read pending: it reported something to the reader (or was just made), and
    /// the next `arm()` issues its one `read()`. Set on `L`, taken by the reader; whoever takes it reads once.
    private let disarmed = Atomic<Bool>(true)
    /// The reader waits idle and reads at once when woken (`setReaderWaitingIdle`): a report leaves the channel armed.
    private let readerWaitsIdle = Atomic<Bool>(false)
    /// While the reader waits idle with its task on `L`: reads in the handler instead of waking the task.
    private let inPlaceReader = Mutex<TailInPlaceReader?>(nil)

    /// Directory events that can change which files match or are at a followed path.
    private static let directoryMask = UInt32(IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)
        | UInt32(IN_ONLYDIR)
    /// Modifications of the files in a directory, by name.
    private static let modifyDirectoryMask = UInt32(IN_MODIFY) | UInt32(IN_ONLYDIR)
    /// What one read of a channel takes: an inotify read refuses (`EINVAL`) a buffer smaller than the next event, and
    /// one event is at most 16 bytes and a name of `NAME_MAX` + 1, so 4 KiB always fits one (and holds dozens).
    static let receiveBytes = 4096

    /// Creates both instances and starts making their channels on `eventLoop` (nil: a loop of NIO's singleton group);
    /// fails with the `errno` of `inotify_init1` (e.g. `EMFILE`: the per-user limit) or of `dup`. A channel that NIO
    /// cannot make later ends inotify like a failed read (`channelClosed`).
    static func make(
        opener: TailOpener, wakeup: SourceWakeup, eventLoop: (any EventLoop)?
    ) -> Result<TailInotify, SourceFiles.Errno> {
        let flags = Int32(IN_NONBLOCK) | Int32(IN_CLOEXEC)
        let directoryFD = inotify_init1(flags)
        guard directoryFD >= 0 else { return .failure(SourceFiles.Errno(errno)) }
        let modifyFD = inotify_init1(flags)
        guard modifyFD >= 0 else {
            let error = SourceFiles.Errno(errno)
            close(directoryFD)
            return .failure(error)
        }
        // The channels' duplicates, made here so that running out of descriptors is reported at once.
        let directoryDuplicate = fcntl(directoryFD, F_DUPFD_CLOEXEC, 0)
        let modifyDuplicate = directoryDuplicate >= 0 ? fcntl(modifyFD, F_DUPFD_CLOEXEC, 0) : -1
        guard directoryDuplicate >= 0, modifyDuplicate >= 0 else {
            let error = SourceFiles.Errno(errno)
            for fd in [directoryFD, modifyFD, directoryDuplicate] where fd >= 0 { close(fd) }
            return .failure(error)
        }
        // From here on `deinit` closes the originals, and NIO (or `makeChannel`, when NIO did not take it) each duplicate.
        let inotify = TailInotify(
            directoryFD: directoryFD, modifyFD: modifyFD, opener: opener, wakeup: wakeup,
            eventLoop: eventLoop ?? MultiThreadedEventLoopGroup.singleton.next())
        let directories = inotify.makeChannel(reading: directoryDuplicate) { inotify in
            (DirectoryEventsHandler(inotify), autoRead: true)
        }
        let modifications = inotify.makeChannel(reading: modifyDuplicate) { inotify in
            (ModificationEventsHandler(inotify), autoRead: false)
        }
        inotify.channels.withLock { channels in
            channels.directories = directories
            channels.modifications = modifications
        }
        return .success(inotify)
    }

    private init(directoryFD: Int32, modifyFD: Int32, opener: TailOpener, wakeup: SourceWakeup, eventLoop: any EventLoop) {
        self.directoryFD = directoryFD
        self.modifyFD = modifyFD
        self.opener = opener
        self.wakeup = wakeup
        self.eventLoop = eventLoop
    }

    /// The only place our own descriptors are closed: nothing can use them any more, and the channels (which hold
    /// this object through their handlers until they close) have closed their duplicates.
    deinit {
        close(directoryFD)
        close(modifyFD)
    }

    /// Makes a channel on `L` that owns and reads `duplicate`, with the handler and `autoRead` that `handler` gives.
    /// A failure ends inotify (`channelClosed`).
    private func makeChannel(
        reading duplicate: Int32,
        _ handler: @escaping @Sendable (TailInotify) -> (any ChannelInboundHandler, autoRead: Bool)
    ) -> EventLoopFuture<any Channel> {
        // NIO closes the duplicate on every failure after it made the channel (the initializer runs then; no channel
        // option is set before it, so nothing can fail in between), and hands it back on a failure before: only
        // then is it ours to close.
        let madeChannel = ChannelMade()
        let future = NIOPipeBootstrap(group: eventLoop)
            .channelInitializer { [self] channel in
                madeChannel.value.store(true, ordering: .releasing)
                let (handler, autoRead) = handler(self)
                do {
                    try channel.pipeline.syncOperations.addHandler(handler)
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
                return channel.setOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: Self.receiveBytes))
                    .flatMap { channel.setOption(.autoRead, value: autoRead) }
            }
            .takingOwnershipOfDescriptor(input: duplicate)
        future.whenFailure { [self] error in
            if !madeChannel.value.load(ordering: .acquiring) { close(duplicate) }
            channelClosed(error)
        }
        return future
    }

    // MARK: Watches

    /// Watches exactly `directories` (adding new ones, removing others). Returns the `errno` of the first watch
    /// that could not be added for a reason other than the directory having gone (`ENOSPC`: the watch limit), or
    /// the error that ended a channel's reading.
    func watch(directories: Set<String>) -> SourceFiles.Errno? {
        state.withLock { state in
            if let broken = state.broken { return broken }
            var failure: SourceFiles.Errno?
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
                    failure = failure ?? SourceFiles.Errno(errno)
                }
            }
            return failure
        }
    }

    /// Watches an open file for modifications (through `/proc/self/fd`, so it is this very file even if it was
    /// renamed). Returns the watch descriptor, or the `errno` (or the error that ended a channel's reading).
    func watchModifications(of descriptor: Int32) -> Result<Int32, SourceFiles.Errno> {
        if let broken = state.withLock({ $0.broken }) { return .failure(broken) }
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

    /// Reports modifications of the file at `path` by name from now on (it was closed) or no longer. Watches its
    /// directory for modifications while it holds a parked path. Returns the `errno` of a watch that could not be
    /// added (`ENOSPC`: the watch limit; the path is then not reported), or the error that ended a channel's reading.
    @discardableResult
    func setParked(_ path: String, _ parked: Bool) -> SourceFiles.Errno? {
        state.withLock { state in
            let directory = Self.directory(of: path)
            if parked {
                if let broken = state.broken { return broken }
                guard !state.parkedPaths.contains(path) else { return nil }
                if state.parkedInDirectory[directory] == nil {
                    let watch = inotify_add_watch(modifyFD, directory, Self.modifyDirectoryMask)
                    guard watch >= 0 else { return SourceFiles.Errno(errno) }
                    // Two names of one directory get one watch, removed when neither holds a parked path.
                    state.modifyWatchOfDirectory[directory] = watch
                    state.modifyWatchUsers[watch, default: 0] += 1
                    if state.modifyDirectoryOfWatch[watch] == nil { state.modifyDirectoryOfWatch[watch] = directory }
                }
                state.parkedInDirectory[directory, default: 0] += 1
                state.parkedPaths.insert(path)
            } else {
                state.modifiedPaths.remove(path)
                guard state.parkedPaths.remove(path) != nil, let count = state.parkedInDirectory[directory] else { return nil }
                guard count == 1 else {
                    state.parkedInDirectory[directory] = count - 1
                    return nil
                }
                state.parkedInDirectory[directory] = nil
                guard let watch = state.modifyWatchOfDirectory.removeValue(forKey: directory) else { return nil }
                let users = (state.modifyWatchUsers[watch] ?? 1) - 1
                if users > 0 {
                    state.modifyWatchUsers[watch] = users
                    if state.modifyDirectoryOfWatch[watch] == directory {
                        state.modifyDirectoryOfWatch[watch] = state.modifyWatchOfDirectory.first { $0.value == watch }?.key
                    }
                } else {
                    inotify_rm_watch(modifyFD, watch)
                    state.modifyWatchUsers[watch] = nil
                    state.modifyDirectoryOfWatch[watch] = nil
                }
            }
            return nil
        }
    }

    /// The directories watched for modifications by name (those holding parked files).
    var modificationWatchedDirectories: Set<String> { state.withLock { Set($0.modifyWatchOfDirectory.keys) } }

    /// The directory `path` is named in, as `TailGlob.path(of:in:)` joins them (`.` for a bare name).
    static func directory(of path: String) -> String {
        AtomicFile.parentDirectory(of: path)
    }

    /// Whether the modification channel will report the next modification (a read is pending or about to be).
    var isArmed: Bool { !disarmed.load(ordering: .acquiring) }

    /// The instances' own descriptors (tests: they stay open until `deinit`, whatever the channels do).
    var descriptors: (directories: Int32, modifications: Int32) { (directoryFD, modifyFD) }

    /// Lets the modification channel report the next modification (call before going idle). Does nothing while
    /// it is armed already; otherwise one `channel.read()` on `L` (once the channel is made: a write before that is
    /// queued by the kernel and read then).
    func arm() {
        guard disarmed.exchange(false, ordering: .acquiringAndReleasing) else { return }
        channels.withLock { $0.modifications }?.whenSuccess { $0.read() }
    }

    /// Whether the reader now waits idle and will read as soon as it is woken (set before the wait, cleared after it;
    /// only without `uplink.linger`, whose budget must not be cut short by a wake-up per write). While it is set a
    /// report keeps the channel armed, so the reader's next `arm()` has nothing to do.
    /// `inPlace`, given only by a reader whose task runs on `L`, reads what a report announces right in the handler
    /// (`TailInPlaceReader`); the task is woken only when it declines.
    func setReaderWaitingIdle(_ waiting: Bool, inPlace: TailInPlaceReader? = nil) {
        inPlaceReader.withLock { $0 = waiting ? inPlace : nil }
        readerWaitsIdle.store(waiting, ordering: .releasing)
    }

    /// Closes both channels and waits until they are closed (waiting first for one still being made): after it no
    /// event is handled any more (nothing opens a file through the opener, nothing signals). The instances' own
    /// descriptors stay open until `deinit`, so the engine may still remove watches (closing its files) after it.
    func stop() async {
        let made = channels.withLock { channels -> [EventLoopFuture<any Channel>] in
            channels.stopping = true
            defer {
                channels.directories = nil
                channels.modifications = nil
            }
            return [channels.directories, channels.modifications].compactMap { $0 }
        }
        for future in made {
            // A channel that could not be made is closed already; one closed already (a failed read) fails `close`.
            guard let channel = try? await future.get() else { continue }
            try? await channel.close().get()
        }
    }

    /// A channel closed, on `L`: expected after `stop()`; otherwise a read failed (`error`, the last one seen) and no
    /// event comes any more, so the engine is woken for a full look, whose `watch(directories:)` returns the error
    /// and makes it poll.
    fileprivate func channelClosed(_ error: (any Error)?) {
        guard !channels.withLock({ $0.stopping }) else { return }
        let code = (error as? IOError)?.errnoCode ?? EIO
        state.withLock { state in
            state.broken = state.broken ?? SourceFiles.Errno(code)
            state.discoveryRequested = true
        }
        wakeup.signal()
    }

    /// What the directory channel read up to a `channelReadComplete`, on `L`: `changed` (nil: a full look is needed)
    /// is noted for the engine, the opener looks at those paths, and the engine is woken.
    fileprivate func directoriesChanged(_ changed: Set<String>?) {
        state.withLock { state in
            if let changed, state.changedPaths.count + changed.count <= Self.maximumQueuedPaths {
                state.changedPaths.formUnion(changed)
            } else {
                state.discoveryRequested = true
            }
        }
        if let changed { opener.scan(changed) } else { opener.scan() }
        wakeup.signal()
    }

    /// The modification channel read something that concerns the reader, on `L`: the reader is woken, and the channel
    /// stays without a pending read until the reader's next `arm()`, unless the reader waits idle (`setReaderWaitingIdle`).
    /// Returns whether the channel stays armed (its handler then issues the read).
    /// `watches`: the open files' own watches that reported a modification.
    fileprivate func modificationsReported(watches: Set<Int32>) -> Bool {
        let staysArmed = readerWaitsIdle.load(ordering: .acquiring)
        if !staysArmed { disarmed.store(true, ordering: .releasing) }
        if staysArmed, !watches.isEmpty, let reader = inPlaceReader.withLock({ $0 }), onlyOpenFilesModified(),
            reader.read(watches)
        {
            return true
        }
        wakeup.signal()
        return staysArmed
    }

    /// Whether nothing but modifications of open files waits for the engine: no named paths, no parked file
    /// modified, no events lost, no full look asked for.
    private func onlyOpenFilesModified() -> Bool {
        state.withLock { state in
            state.changedPaths.isEmpty && !state.discoveryRequested && state.modifiedPaths.isEmpty
                && !state.modificationsLost
        }
    }

    // MARK: Events

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

    /// One event of an inotify read buffer, valid only inside `forEachEvent`'s body (it points into the buffer).
    private struct Event {
        var watch: Int32
        var mask: UInt32
        var cookie: UInt32
        /// The name's bytes up to its first NUL; empty for an event about the watched file itself.
        var nameBytes: Slice<UnsafeRawBufferPointer>
        /// The name, decoded when asked for: a modification of a file in a watched directory needs it only while some
        /// file is parked, and at ordinary rates that is every line's event.
        var name: String? { nameBytes.isEmpty ? nil : String(decoding: nameBytes, as: UTF8.self) }
    }

    private static func forEachEvent(_ events: UnsafeRawBufferPointer, _ body: (Event) -> Void) {
        let header = MemoryLayout<inotify_event>.size
        var offset = 0
        while offset + header <= events.count {
            let watch = events.loadUnaligned(fromByteOffset: offset, as: Int32.self)
            let mask = events.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let cookie = events.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            let nameLength = Int(events.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            let nameStart = offset + header
            let nameEnd = min(events.count, nameStart + nameLength)
            let padded = events[nameStart..<max(nameStart, nameEnd)]
            let nameBytes = padded[padded.startIndex..<(padded.firstIndex(of: 0) ?? padded.endIndex)]
            body(Event(watch: watch, mask: mask, cookie: cookie, nameBytes: nameBytes))
            offset += header + nameLength
        }
    }

    /// Goes through directory events in order: notes the paths they name (or that a full look is needed), and
    /// hands a followed file renamed away to the opener under its new name (in case it was never opened).
    /// Returns the paths named, nil when a full look is needed.
    fileprivate func handleDirectoryEvents(_ events: UnsafeRawBufferPointer, _ moves: inout PendingMoves) -> Set<String>? {
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

    /// Goes through modification events: returns whether one concerns an open file (a watch of its own, added to
    /// `watches`) or a parked one (noted in `modifiedPaths`); events about other files in the watched directories are
    /// dropped.
    fileprivate func handleModifyEvents(_ events: UnsafeRawBufferPointer, watches: inout Set<Int32>) -> Bool {
        var relevant = false
        state.withLock { state in
            Self.forEachEvent(events) { event in
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    state.modificationsLost = true
                    relevant = true
                    return
                }
                guard !event.nameBytes.isEmpty, let directory = state.modifyDirectoryOfWatch[event.watch] else {
                    if event.mask & UInt32(IN_MODIFY) != 0 {  // an open file's own watch
                        relevant = true
                        watches.insert(event.watch)
                    }
                    return
                }
                // A file in a watched directory, by name: only a parked one concerns the reader.
                guard !state.parkedPaths.isEmpty, let name = event.name else { return }
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
}

/// Whether NIO made the channel for a descriptor (and so owns it), set by its initializer on `L`.
private final class ChannelMade: Sendable {
    let value = Atomic<Bool>(false)
}

/// What the handlers of both inotify channels share besides reading: they keep the last read error and, when their
/// channel closes, end inotify with it (`TailInotify.channelClosed`). Runs on `L` only.
private class InotifyEventsHandler {
    let inotify: TailInotify
    /// The last read error, reported when the channel closes.
    private var failure: (any Error)?

    init(_ inotify: TailInotify) {
        self.inotify = inotify
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        failure = error
    }

    func channelInactive(context: ChannelHandlerContext) {
        inotify.channelClosed(failure)
    }
}

/// Reads the directory instance (`autoRead` on): parses every read, and at the end of each batch of reads hands what
/// they named to `TailInotify.directoriesChanged`. Runs on `L` only.
private final class DirectoryEventsHandler: InotifyEventsHandler, ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    /// Renames of followed paths whose other half has not come yet; kept across reads, as the kernel may split a
    /// pair between two.
    private var moves = TailInotify.PendingMoves()
    /// Paths named since the last `channelReadComplete` (nil: a full look is needed), and whether anything was read.
    private var changed: Set<String>? = []
    private var read = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let events = unwrapInboundIn(data)
        let paths = events.withUnsafeReadableBytes { inotify.handleDirectoryEvents($0, &moves) }
        if let paths, changed != nil { changed!.formUnion(paths) } else { changed = nil }
        read = true
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard read else { return }
        let changed = self.changed
        self.changed = []
        read = false
        inotify.directoriesChanged(changed)
    }
}

/// Reads the modification instance (`autoRead` off): each `read()` (an `arm()`, or one of its own) reads once; what
/// concerns the reader wakes it and leaves the channel disarmed (armed, while the reader waits idle), anything else is
/// dropped and the channel reads on. Runs on `L` only.
private final class ModificationEventsHandler: InotifyEventsHandler, ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private var relevant = false
    /// The open files' watches that reported since the last report to the reader.
    private var watches: Set<Int32> = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let events = unwrapInboundIn(data)
        if events.withUnsafeReadableBytes({ inotify.handleModifyEvents($0, watches: &watches) }) { relevant = true }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if relevant {
            relevant = false
            let staysArmed = inotify.modificationsReported(watches: watches)
            // Emptied after the report, not copied before it: the set's storage is then this handler's alone and
            // is cleared in place instead of being allocated again for every event.
            watches.removeAll(keepingCapacity: true)
            if staysArmed { context.read() }
        } else {
            // Nothing the reader waits for: stay armed (NIO keeps polling while a read is pending). No watch was
            // noted either: only a relevant event notes one.
            context.read()
        }
    }
}

#endif
