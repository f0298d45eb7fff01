import Synchronization
import UplinkWire

/// Hands the remote configuration hints the collector sends on the stream (the `Uplink-Config` response header and
/// `{"config":…}` lines) to whoever acts on them: the agent's remote configuration, when it is enabled. One relay
/// outlives the uplinks a reload replaces.
public final class ConfigHintRelay: Sendable {
    private let handler = Mutex<(@Sendable (ConfigHint) -> Void)?>(nil)

    public init() {}

    /// From now on every hint goes to `receive` (called on the stream's event loop: it must return at once).
    public func deliver(to receive: @escaping @Sendable (ConfigHint) -> Void) {
        handler.withLock { $0 = receive }
    }

    /// Passes `hint` on, or drops it when nobody listens (remote configuration is off).
    func relay(_ hint: ConfigHint) {
        handler.withLock { $0 }?(hint)
    }
}
