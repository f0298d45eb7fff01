import Logging
import ServiceLifecycle
import UplinkCore
import UplinkPersistentBuffer

extension Agent {
    /// Builds the agent as `init` does; with `configuration.persistence` (`buffer.persist`) it first opens and
    /// recovers the persistent buffer, and the stream keeps its persisted epoch and numbering.
    ///
    /// Throws when the buffer's directory cannot be created, read or written (the error names the path and the
    /// system's reason).
    public static func open(
        configuration: AgentConfiguration, logger: Logger
    ) throws(PersistentBufferError) -> Agent {
        guard let settings = configuration.persistence else {
            return Agent(configuration: configuration, logger: logger)
        }
        let buffer = try PersistentBuffer.open(settings, proposedEpoch: configuration.uplink.epoch, logger: logger)
        var configuration = configuration
        configuration.uplink.epoch = buffer.epoch
        let ring = RecordRing(
            capacity: configuration.bufferBytes, policy: configuration.overflow, persistentBuffer: buffer)
        return Agent(configuration: configuration, logger: logger, ring: ring)
    }

    /// The persistence service when the ring has a disk side, to run before (so it stops after) the uplink.
    var persistenceServices: [ServiceGroupConfiguration.ServiceConfiguration] {
        guard let settings = ring.persistentSettings else { return [] }
        return [.init(service: BufferPersistenceService(ring: ring, settings: settings))]
    }
}

/// Runs the persistent buffer's timed work: in `spill` mode, writes frames unacknowledged for `spill_after` to disk;
/// in `always` mode, flushes what was written every `sync_interval` (group commit). On shutdown (it stops after the
/// uplink has drained) it writes what is still unacknowledged and records the clean shutdown.
public struct BufferPersistenceService: Service {
    public let ring: RecordRing
    public let settings: PersistentBufferSettings

    public init(ring: RecordRing, settings: PersistentBufferSettings) {
        self.ring = ring
        self.settings = settings
    }

    public func run() async throws {
        do {
            try await cancelWhenGracefulShutdown {
                switch settings.mode {
                case .always:
                    while true {
                        try await Task.sleep(for: settings.syncInterval)
                        ring.syncPersistentBuffer()
                    }
                case .spill:
                    // Frames below `mark` were appended at least one `spillAfter` ago.
                    var mark = ring.nextSequence
                    while true {
                        try await Task.sleep(for: settings.spillAfter)
                        ring.spillUnacknowledged(below: mark)
                        mark = ring.nextSequence
                    }
                }
            }
        } catch is CancellationError {
            // Shutdown.
        }
        ring.closePersistentBuffer()
    }
}
