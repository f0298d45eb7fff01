import CLinuxIO
import Foundation

/// A child process for test daemons (nginx, tinyproxy), spawned with `posix_spawn` and a clean signal state: an
/// empty signal mask and default dispositions, whatever the test process blocks or ignores (signals blocked there
/// would otherwise be inherited, and `timeout(1)` or the daemon would never see SIGTERM). It is reaped with
/// `waitpid` here, so no run loop or SIGCHLD handling is needed. It inherits no descriptor but its standard streams.
public final class ChildProcess: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// The child's process id.
    public let processIdentifier: pid_t
    private let lock = NSLock()
    private var status: Int32?

    /// Starts `arguments[0]` (an absolute path) with the rest as arguments; standard output goes to `outputPath`
    /// (appended; `/dev/null` when nil), standard error to `errorPath` (appended) or, when nil, with the output;
    /// standard input is `inputPath` (`/dev/null` when nil). `environment` replaces this process's (nil: inherited).
    public init(
        _ arguments: [String], outputPath: String? = nil, errorPath: String? = nil, inputPath: String? = nil,
        environment: [String: String]? = nil
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, inputPath ?? "/dev/null", O_RDONLY, 0)
        let output = outputPath ?? "/dev/null"
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        if let errorPath {
            posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        // Nothing else of the test process may leak into the daemon: a socket it inherited would stay open after
        // the test closed it, and its peer would never see the connection end (other tests' connections too).
        Self.closeInheritedDescriptors(&actions)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var all = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var pid = pid_t()
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { for pointer in envp ?? [] { free(pointer) } }
        let result = envp.map { posix_spawn(&pid, arguments[0], &actions, &attributes, argv, $0) }
            ?? posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard result == 0 else {
            throw Failure(description: "posix_spawn \(arguments[0]): \(String(cString: strerror(result)))")
        }
        processIdentifier = pid
    }

    /// Makes the child close every descriptor from 3 up (CLinuxIO's `uplink_spawn_close_from`, as the exec source
    /// does); where the C library lacks it, the parent's descriptors are marked close-on-exec instead, which does the
    /// same for everything open now.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        if uplink_spawn_close_from(&actions, 3) == 0 { return }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in names.compactMap({ Int32($0) }) where descriptor > 2 {
            let flags = fcntl(descriptor, F_GETFD)
            if flags >= 0 { _ = fcntl(descriptor, F_SETFD, flags | FD_CLOEXEC) }
        }
    }

    /// The raw `waitpid` status once the child has exited (`(status >> 8) & 0xff` is the exit code).
    public var exitStatus: Int32? {
        _ = isRunning
        lock.lock()
        defer { lock.unlock() }
        return status
    }

    /// Whether the child has not exited yet (reaps it when it has).
    public var isRunning: Bool {
        lock.lock()
        defer { lock.unlock() }
        if status != nil { return false }
        var raw: Int32 = 0
        let result = waitpid(processIdentifier, &raw, WNOHANG)
        if result == processIdentifier || result < 0 {
            status = raw
            return false
        }
        return true
    }

    /// Blocks the calling thread until the child exits and returns its exit code, or its signal number when a
    /// signal ended it (what Foundation's `Process.terminationStatus` says). For short commands only; not from async
    /// code, where it would hold one of the global executor's few threads (``DedicatedThreads``).
    @available(*, noasync, message: "blocks a thread of the global executor: use waitForExit(seconds:) or DedicatedThreads.blocking.run")
    public func waitUntilExitBlocking() -> Int32 {
        lock.lock()
        defer { lock.unlock() }
        if status == nil {
            var raw: Int32 = 0
            while waitpid(processIdentifier, &raw, 0) < 0 && errno == EINTR {}
            status = raw
        }
        let raw = status ?? 0
        return raw & 0x7f == 0 ? (raw >> 8) & 0xff : raw & 0x7f
    }

    /// Sends `signal` to the child if it is still running.
    public func send(_ signal: Int32) {
        if isRunning { kill(processIdentifier, signal) }
    }

    /// Waits up to `seconds` for the child to exit; returns whether it did. Polls (`eventually`) with `Task.sleep`, so
    /// the wait holds no thread.
    @discardableResult
    public func waitForExit(seconds: Double) async -> Bool {
        await eventually(timeout: .milliseconds(Int(seconds * 1000))) { !isRunning }
    }

    /// Waits (`eventually`, at most `timeout`) until `ready` holds; false after `timeout` or once the child exited.
    public func waitUntil(timeout: Duration, _ ready: () async -> Bool) async -> Bool {
        var isReady = false
        await eventually(timeout: timeout) {
            isReady = await ready()
            return isReady || !isRunning
        }
        return isReady
    }

    /// Starts a server (`arguments`, its output to `outputPath`) and waits (`eventually`, at most `timeout`) until
    /// `ready`. When it exits first or is not ready in time, stops it (`terminate(grace:)`) and throws with the end of
    /// its output, saying `name` "did not start".
    public static func startServer(
        _ name: String, _ arguments: [String], outputPath: String, timeout: Duration, grace: Double,
        ready: () async -> Bool
    ) async throws -> ChildProcess {
        let process = try ChildProcess(arguments, outputPath: outputPath)
        if await process.waitUntil(timeout: timeout, ready) { return process }
        await process.terminate(grace: grace)
        let log = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        throw Failure(description: "\(name) did not start: \(log.suffix(2000))")
    }

    /// SIGTERM, then SIGKILL if it has not exited after `grace` seconds; returns once it has exited.
    public func terminate(grace: Double = 5) async {
        send(SIGTERM)
        if await !waitForExit(seconds: grace) {
            send(SIGKILL)
            await waitForExit(seconds: 5)
        }
    }

    /// A child still running when the last reference goes (a test that threw before stopping it, a `defer` that cannot
    /// await) is killed and reaped here.
    deinit {
        if isRunning {
            kill(processIdentifier, SIGKILL)
            var status: Int32 = 0
            waitpid(processIdentifier, &status, 0)
        }
    }
}
