import Foundation
import Logging
import Synchronization
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

/// A fresh temporary directory (`TestDirectories`), removed by `remove()` or else when the test process exits.
struct TailTemporaryDirectory {
    let path: String

    init() throws {
        path = try TestDirectories.make("uplink-tail-tests")
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Appends to a file through a descriptor of its own (`O_APPEND`), like a logging process.
final class TailTestWriter {
    private(set) var descriptor: Int32

    init(_ path: String, truncate: Bool = false) {
        descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (truncate ? O_TRUNC : 0), 0o644)
        precondition(descriptor >= 0, "cannot open \(path): errno \(errno)")
    }

    func write(_ text: String) {
        write(Array(text.utf8))
    }

    func write(_ bytes: [UInt8]) {
        var done = 0
        while done < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + done, bytes.count - done) }
            precondition(count > 0, "write failed: errno \(errno)")
            done += count
        }
    }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    deinit { close() }
}

/// Writes a whole file at once.
/// This process's descriptors (names in /proc/self/fd) whose target is `target` (for a deleted file: its path and
/// " (deleted)").
func descriptorsOpen(on target: String) -> [String] {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return entries.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == target }
}

/// Whether this process holds `path` open for reading only (a tailer following it; a test's writer holds it for
/// writing), from /proc/self/fdinfo: how a test knows the tailer has the file before it rotates it, instead of
/// sleeping.
func isOpenForReadingInThisProcess(_ path: String) -> Bool {
    descriptorsOpen(on: URL(fileURLWithPath: path).resolvingSymlinksInPath().path).contains { entry in
        guard let info = try? String(contentsOfFile: "/proc/self/fdinfo/" + entry, encoding: .utf8),
            let flagsLine = info.split(separator: "\n").first(where: { $0.hasPrefix("flags:") }),
            let flags = Int(flagsLine.dropFirst("flags:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        else { return false }
        return flags & Int(O_ACCMODE) == Int(O_RDONLY)
    }
}

func writeFile(_ path: String, _ text: String) {
    let writer = TailTestWriter(path, truncate: true)
    writer.write(text)
    writer.close()
}

/// A tail source running in a task of its own.
struct RunningTail {
    let task: Task<Void, any Error>
    /// What the source reports: healthy once every file it matched is open.
    let health: SourceHealth

    init(
        _ config: TailConfig, sink: some RecordSink, stateDirectory: String? = nil, name: String = "tail-test",
        logger: Logger = Logger(label: "tail-test"), clock: any TickClock = SystemTickClock(),
        health: SourceHealth = SourceHealth()
    ) {
        let source = TailSource(name: name, config: config, clock: clock)
        let context = SourceContext(sink: sink, logger: logger, stateDirectory: stateDirectory, health: health)
        self.health = health
        task = Task { try await source.run(context: context) }
    }

    /// Whether every file the paths matched was opened (the source reported itself healthy) in time: from then on a
    /// write to them is read, whatever `start_at` says.
    func opened() async -> Bool {
        await eventually { health.snapshot.state == .healthy }
    }

    /// Cancels the source and waits until it returned.
    func stop() async throws {
        task.cancel()
        try await task.value
    }
}

/// A configuration for tests: short intervals, polling unless asked otherwise.
func tailTestConfig(_ paths: [String], watch: TailWatchMethod = .poll, startAt: TailStartPosition = .beginning)
    -> TailConfig
{
    var config = TailConfig()
    config.paths = paths
    config.watch = watch
    config.startAt = startAt
    config.pollInterval = .milliseconds(20)
    config.discoveryInterval = .milliseconds(100)
    config.checkpointInterval = .milliseconds(50)
    config.partialLineTimeout = .milliseconds(300)
    config.multilineTimeout = .milliseconds(300)
    return config
}


extension Record {
    /// The log message, if this is a log record.
    var tailMessage: String? { logLine?.message }

    /// The value of a log field.
    func tailField(_ key: String) -> String? {
        logLine?.fields.first { $0.key == key }?.value
    }
}

/// The messages of log records.
func messages(_ records: [Record]) -> [String] {
    records.compactMap(\.tailMessage)
}
