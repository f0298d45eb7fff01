import Synchronization
import UplinkWire

/// The stream's part in remote configuration, between the uplinks an agent runs (a reload's successor too) and the
/// agent's remote configuration: the hints the collector sends (the `Uplink-Config` response header and
/// `{"config":…}` lines) go one way, the agent's status (a `{"config_status":…}` body line) the other.
///
/// The status line is written only on a stream whose collector sent `Uplink-Config` (an older collector would count
/// an unknown line as a rejected record), once per change, and again at the start of every such stream.
public final class RemoteConfigRelay: Sendable {
    private let hintHandler = Mutex<(@Sendable (ConfigHint) -> Void)?>(nil)
    /// The current status line, and how many statuses were published (the writer compares it with what it sent).
    private let status = Mutex<(version: UInt64, line: [UInt8])>((0, []))
    /// `status.version`, read without the lock on every write pass of the stream.
    private let statusVersion = Atomic<UInt64>(0)
    /// Wakes the running uplink's writer when a status is published.
    private let statusListener = Mutex<(@Sendable () -> Void)?>(nil)

    public init() {}

    /// From now on every hint goes to `receive` (called on the stream's event loop: it must return at once).
    public func deliver(to receive: @escaping @Sendable (ConfigHint) -> Void) {
        hintHandler.withLock { $0 = receive }
    }

    /// Passes `hint` on, or drops it when nobody listens (remote configuration is off).
    func relay(_ hint: ConfigHint) {
        hintHandler.withLock { $0 }?(hint)
    }

    /// Makes `status` the line the streams carry, and wakes the running uplink to write it.
    public func publish(_ status: ConfigStatus) {
        var line: [UInt8] = []
        WireLineWriter.appendConfigStatusLine(status, to: &line)
        let version = self.status.withLock { current in
            current = (current.version + 1, line)
            return current.version
        }
        statusVersion.store(version, ordering: .releasing)
        statusListener.withLock { $0 }?()
    }

    /// How many statuses were published (0: none).
    var publishedVersion: UInt64 { statusVersion.load(ordering: .acquiring) }

    /// The latest status line and its version.
    var latestStatus: (version: UInt64, line: [UInt8]) { status.withLock { $0 } }

    /// `wake` runs on every publish (the uplink that runs now registers; a successor replaces it).
    func onStatusPublished(_ wake: @escaping @Sendable () -> Void) {
        statusListener.withLock { $0 = wake }
    }
}
