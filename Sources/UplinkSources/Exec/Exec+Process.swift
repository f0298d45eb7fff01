import CLinuxIO

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ExecSource {
    /// How one run of the command ended.
    enum Outcome: Sendable, Equatable {
        /// The command exited with `status`; `output` is what it printed (at most `maximumOutput` bytes).
        case exited(status: Int32, output: [UInt8])
        /// The command was ended by signal `signal` (not by us).
        case signaled(signal: Int32, output: [UInt8])
        /// The command did not finish within the timeout and was killed.
        case timedOut(output: [UInt8])
        /// The command could not be started (`errno`, e.g. `ENOENT` for a program not found).
        case spawnFailed(errno: Int32)
        /// The source's task was cancelled during the run; the command was killed.
        case cancelled
    }

    /// Largest standard output kept, in bytes; the rest is read and discarded.
    static var maximumOutput: Int { 1 << 20 }

    /// Runs `command` with standard output piped back, standard input and error on `/dev/null`, in a process
    /// group of its own, and waits for it, without blocking a thread: the pipe is non-blocking and polled, with
    /// sleeps growing from 1 ms to 50 ms, until the command exits and closes its output, or `timeout` passes
    /// (then the whole group gets `SIGKILL`), or the task is cancelled (likewise).
    static func runCommand(_ command: [String], timeout: Duration) async -> Outcome {
        guard !command.isEmpty else { return .spawnFailed(errno: ENOENT) }
        var fds: [Int32] = [-1, -1]
        // Close-on-exec from the start: a command another exec source spawns meanwhile must not inherit the write end,
        // or this run would see its output end only when that command exits.
        guard uplink_pipe_cloexec(&fds) == 0 else { return .spawnFailed(errno: errno) }
        let readEnd = fds[0]
        let writeEnd = fds[1]
        _ = fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK)
        defer { close(readEnd) }

        let spawned = spawn(command, stdout: writeEnd)
        close(writeEnd)
        let pid: pid_t
        switch spawned {
        case .failure(let code): return .spawnFailed(errno: code.value)
        case .success(let child): pid = child
        }

        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var output: [UInt8] = []
        var endOfOutput = false
        var exitStatus: Int32?
        var delay = Duration.milliseconds(1)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            // Drain what the pipe holds.
            while !endOfOutput {
                let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count > 0 {
                    let room = maximumOutput - output.count
                    if room > 0 { output.append(contentsOf: buffer[0..<min(count, room)]) }
                } else if count == 0 {
                    endOfOutput = true
                } else if errno == EINTR {
                    continue
                } else {
                    break  // EAGAIN: nothing more for now
                }
            }
            if exitStatus == nil {
                var status: Int32 = 0
                if waitpid(pid, &status, WNOHANG) == pid { exitStatus = status }
            }
            if let exitStatus, endOfOutput {
                return decodedExit(exitStatus, output: output)
            }
            if clock.now >= deadline {
                kill(-pid, SIGKILL)
                kill(pid, SIGKILL)
                if exitStatus == nil { await reap(pid) }
                return .timedOut(output: output)
            }
            do {
                try await Task.sleep(for: delay)
            } catch {
                kill(-pid, SIGKILL)
                kill(pid, SIGKILL)
                if exitStatus == nil { await reap(pid) }
                return .cancelled
            }
            delay = min(delay * 2, .milliseconds(50))
        }
    }

    private static func decodedExit(_ status: Int32, output: [UInt8]) -> Outcome {
        let signal = status & 0x7f
        if signal == 0 { return .exited(status: (status >> 8) & 0xff, output: output) }
        return .signaled(signal: signal, output: output)
    }

    /// Waits for a child that was sent `SIGKILL` (it dies at once), polling so no thread blocks for long.
    private static func reap(_ pid: pid_t) async {
        var status: Int32 = 0
        for _ in 0..<1000 {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid || (result == -1 && errno != EINTR) { return }
            // Not cancellable on purpose: the child must be reaped, and it is already dead or dying.
            let clock = ContinuousClock()
            let until = clock.now.advanced(by: .milliseconds(1))
            while clock.now < until { await Task.yield() }
        }
        _ = waitpid(pid, &status, 0)
    }

    private struct SpawnError: Error {
        var value: Int32
    }

    /// `posix_spawnp` with stdout on `stdout`, stdin and stderr on `/dev/null`, no other descriptor of the agent, a
    /// new process group, an empty signal mask and default dispositions for the signals a parent commonly ignores or
    /// handles.
    private static func spawn(_ command: [String], stdout: Int32) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, stdout, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        // Whatever else is open here (a library's descriptor without close-on-exec) stays with the agent: a command
        // must not hold the agent's sockets or files. Only glibc 2.34+ can; elsewhere close-on-exec is all there is.
        _ = uplink_spawn_close_from(&actions, 3)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        posix_spawnattr_setpgroup(&attributes, 0)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD, SIGUSR1, SIGUSR2] {
            sigaddset(&defaults, signal)
        }
        posix_spawnattr_setsigdefault(&attributes, &defaults)

        let arguments: [UnsafeMutablePointer<CChar>?] = command.map { strdup($0) } + [nil]
        defer { for argument in arguments { free(argument) } }
        let environment = currentEnvironment()
        defer { for entry in environment { free(entry) } }
        guard let program = arguments[0] else { return .failure(SpawnError(value: ENOENT)) }
        var pid: pid_t = 0
        let result = posix_spawnp(&pid, program, &actions, &attributes, arguments, environment)
        return result == 0 ? .success(pid) : .failure(SpawnError(value: result))
    }

    /// A copy of this process's environment as a null-terminated C array (each entry to be freed): the environment
    /// the agent was started with, from `/proc/self/environ` (reading the C `environ` global is not concurrency-safe
    /// in Swift 6), or only `PATH` where that file cannot be read.
    private static func currentEnvironment() -> [UnsafeMutablePointer<CChar>?] {
        var entries: [UnsafeMutablePointer<CChar>?] = []
        var reader = SmallFileReader(path: "/proc/self/environ", initialCapacity: 4096, maximumSize: 1 << 20)
        if (try? reader.read()) != nil {
            reader.withContents { bytes in
                var start = 0
                for index in 0...bytes.count where index == bytes.count || bytes[index] == 0 {
                    if index > start {
                        guard let raw = malloc(index - start + 1) else { return }
                        let entry = raw.assumingMemoryBound(to: CChar.self)
                        for offset in 0..<(index - start) { entry[offset] = CChar(bitPattern: bytes[start + offset]) }
                        entry[index - start] = 0
                        entries.append(entry)
                    }
                    start = index + 1
                }
            }
        } else if let path = getenv("PATH") {
            entries.append(strdup("PATH=" + String(cString: path)))
        }
        entries.append(nil)
        return entries
    }
}
