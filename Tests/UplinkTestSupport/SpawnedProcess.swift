import Foundation

/// A child process with the members of Foundation's `Process` that tests use (`processIdentifier`, `isRunning`,
/// `terminate()`, `interrupt()`, `waitUntilExit()`, `terminationStatus`), spawned as a `ChildProcess`: Foundation's
/// `Process.run()` reads `/proc/self/fd` to close what the child inherits, and can crash the test process doing so
/// when many descriptors are open (see `OpenSSL`), which a test suite full of sockets has.
public final class SpawnedProcess: Sendable {
    public let child: ChildProcess

    /// Starts `arguments[0]` (an absolute path); see `ChildProcess.init` for the rest.
    public init(
        _ arguments: [String], outputPath: String? = nil, errorPath: String? = nil, inputPath: String? = nil,
        environment: [String: String]? = nil
    ) throws {
        child = try ChildProcess(
            arguments, outputPath: outputPath, errorPath: errorPath, inputPath: inputPath, environment: environment)
    }

    /// What a command run to its end left: its exit code (or the signal that ended it) and what it printed.
    public struct Completed: Sendable {
        public var status: Int32
        public var output: [UInt8]
        public var error: [UInt8]

        public var outputText: String { String(decoding: output, as: UTF8.self) }
        public var errorText: String { String(decoding: error, as: UTF8.self) }
    }

    /// Runs `arguments` (`arguments[0]` an absolute path) to its end, blocking the calling thread (call it from
    /// ``DedicatedThreads/blocking`` in async code); standard input from `inputPath` (`/dev/null` when nil), standard
    /// error with the output when `mergingError`.
    @available(*, noasync, message: "blocks a thread of the global executor: use run(_:inputPath:mergingError:)")
    public static func runToEnd(_ arguments: [String], inputPath: String? = nil, mergingError: Bool = false) throws -> Completed {
        let directory = try TestDirectories.make("uplink-spawned")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let process = try SpawnedProcess(
            arguments, outputPath: directory + "/output", errorPath: mergingError ? nil : directory + "/error",
            inputPath: inputPath)
        let status = process.child.waitUntilExitBlocking()
        func read(_ name: String) -> [UInt8] { FileManager.default.contents(atPath: directory + "/" + name).map { Array($0) } ?? [] }
        return Completed(status: status, output: read("output"), error: read("error"))
    }

    /// `runToEnd` on ``DedicatedThreads/blocking``: the calling task waits without holding a thread of the global
    /// executor.
    public static func run(_ arguments: [String], inputPath: String? = nil, mergingError: Bool = false) async throws -> Completed {
        try await DedicatedThreads.blocking.run { try runToEnd(arguments, inputPath: inputPath, mergingError: mergingError) }
    }

    public var processIdentifier: Int32 { child.processIdentifier }

    /// Whether it has not exited yet.
    public var isRunning: Bool { child.isRunning }

    /// Sends SIGTERM (when it still runs); returns at once.
    public func terminate() { child.send(SIGTERM) }

    /// Sends SIGINT (when it still runs); returns at once.
    public func interrupt() { child.send(SIGINT) }

    /// Blocks the calling thread until it has exited. Not from async code (``awaitExit()``); a `defer` there only
    /// signals: a child still running when released is killed and reaped (`ChildProcess`).
    @available(*, noasync, message: "blocks a thread of the global executor: use awaitExit()")
    public func waitUntilExit() { _ = child.waitUntilExitBlocking() }

    /// `waitUntilExit()` on ``DedicatedThreads/blocking``: the calling task waits without holding a thread of the
    /// global executor.
    public func awaitExit() async {
        await DedicatedThreads.blocking.run { waitUntilExit() }
    }

    /// Its exit code, or the number of the signal that ended it (waits for it to exit, as Foundation's does not, so
    /// read it after it has).
    public var terminationStatus: Int32 { child.waitUntilExitBlocking() }

    /// Whether it exited (with `terminationStatus` its exit code), not ended by a signal. Waits for it to exit.
    public var exitedNormally: Bool {
        _ = child.waitUntilExitBlocking()
        return child.exitStatus.map { $0 & 0x7f == 0 } ?? false
    }
}

/// What a child process writes to a file, read when asked: its output so far.
public final class CapturedOutput: Sendable {
    /// The file the output goes to.
    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// The output so far (invalid UTF-8 replaced).
    public var text: String {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }
}
