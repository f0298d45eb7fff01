import CLinuxIO
import Dispatch
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Waits for sd-journal's descriptor (inotify on the journal's directories and files) on a thread of its own, blocked
/// in `poll(2)` with a control pipe, and wakes the engine when it becomes readable. Like the tailer's inotify channel,
/// it reports readiness only while the engine is idle ("armed"): the engine calls `sd_journal_process` (which drains
/// the descriptor) and then `arm()` before it waits again, so a busy journal does not wake a busy reader.
final class JournaldWatcher: Sendable {
    private let journalFD: Int32
    private let controlRead: Int32
    private let controlWrite: Int32
    private let wakeup: SourceWakeup
    /// Waits for the watcher thread to exit at shutdown: real time, whatever clock the engine runs on.
    private let exitWakeup = SourceWakeup(clock: SystemTickClock())
    private let exited = Atomic<Bool>(false)
    private let started = Atomic<Bool>(false)

    /// A watcher of `journalFD` that signals `wakeup`; fails with the `errno` of `pipe(2)`.
    static func make(journalFD: Int32, wakeup: SourceWakeup) -> Result<JournaldWatcher, SourceFiles.Errno> {
        var pipeFDs: [Int32] = [-1, -1]
        // Close-on-exec from the start: an exec source's command spawned meanwhile must not inherit it.
        guard uplink_pipe_cloexec(&pipeFDs) == 0 else { return .failure(SourceFiles.Errno(errno)) }
        for fd in pipeFDs {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        return .success(JournaldWatcher(journalFD: journalFD, controlRead: pipeFDs[0], controlWrite: pipeFDs[1], wakeup: wakeup))
    }

    private init(journalFD: Int32, controlRead: Int32, controlWrite: Int32, wakeup: SourceWakeup) {
        self.journalFD = journalFD
        self.controlRead = controlRead
        self.controlWrite = controlWrite
        self.wakeup = wakeup
    }

    deinit {
        close(controlRead)
        close(controlWrite)
    }

    /// Starts the thread.
    func start() {
        started.store(true, ordering: .sequentiallyConsistent)
        DispatchQueue(label: "uplink.journald.watch").async { [self] in
            self.eventLoop()
            self.exited.store(true, ordering: .sequentiallyConsistent)
            self.exitWakeup.signal()
        }
    }

    /// Lets the thread report the next change (call after `sd_journal_process`, before going idle).
    func arm() {
        var byte = UInt8(ascii: "a")
        _ = write(controlWrite, &byte, 1)
    }

    /// Stops the thread; waits up to a second for it to be gone. Returns whether it is (the journal's descriptor may
    /// be closed only then).
    func stop() async -> Bool {
        var byte = UInt8(ascii: "q")
        _ = write(controlWrite, &byte, 1)
        guard started.load(ordering: .sequentiallyConsistent) else { return true }
        // In a task of its own: the caller's task is usually cancelled, which would end the wait at once.
        await Task { [self] in
            if !exited.load(ordering: .sequentiallyConsistent) { await exitWakeup.wait(timeout: .seconds(1)) }
        }.value
        return exited.load(ordering: .sequentiallyConsistent)
    }

    private func eventLoop() {
        var armed = true
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            var fds = [
                pollfd(fd: controlRead, events: Int16(POLLIN), revents: 0),
                pollfd(fd: armed ? journalFD : -1, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, nfds_t(fds.count), -1)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            // A descriptor closed or broken under us: stop rather than spin (the engine then sees no more changes).
            if fds[0].revents & Int16(POLLNVAL | POLLERR) != 0 || fds[1].revents & Int16(POLLNVAL) != 0 { return }
            if fds[0].revents != 0 {
                while true {
                    let count = buffer.withUnsafeMutableBytes { read(controlRead, $0.baseAddress, $0.count) }
                    if count <= 0 { break }
                    for byte in buffer.prefix(count) {
                        if byte == UInt8(ascii: "q") { return }
                        armed = true
                    }
                }
            }
            if fds[1].revents != 0 {
                armed = false
                wakeup.signal()
            }
        }
    }
}
