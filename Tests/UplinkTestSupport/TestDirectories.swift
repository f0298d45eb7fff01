import Foundation
import Synchronization

/// The temporary directories of this test process. Each is removed when the process exits, after every test has
/// finished reading what its collectors, proxies and agents left there; set `UPLINK_KEEP_TEST_DIRECTORIES=1` to keep
/// them for a look after a failure. (Removing them when their test's objects go away would be too early: Swift may
/// release an object right after its last use, before the test reads the files.)
public enum TestDirectories {
    private static let created = Mutex<[String]>([])
    private static let removalRegistered = Atomic(false)

    /// Creates `$TMPDIR/<prefix>-<UUID>` and returns its path.
    public static func make(_ prefix: String) throws -> String {
        let path = reserve(prefix)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A fresh path `$TMPDIR/<prefix>-<UUID>` that is not created here, for something that creates its directory
    /// itself (an agent's `state_dir`); removed at exit like the others if it exists then.
    public static func reserve(_ prefix: String) -> String {
        let path = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString)"
        removeAtExit(path)
        return path
    }

    /// Removes `path` (a directory this process created) when the process exits.
    public static func removeAtExit(_ path: String) {
        created.withLock { $0.append(path) }
        if !removalRegistered.exchange(true, ordering: .acquiringAndReleasing) {
            atexit { TestDirectories.removeAll() }
        }
    }

    private static func removeAll() {
        guard ProcessInfo.processInfo.environment["UPLINK_KEEP_TEST_DIRECTORIES"] == nil else { return }
        for path in created.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }
}
