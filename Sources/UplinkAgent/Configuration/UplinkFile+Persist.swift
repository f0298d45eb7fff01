import UplinkConfig
import UplinkCore

extension UplinkFile.BufferSection {
    /// `buffer.persist` (mapping; `persist:` alone takes every default): keep buffered records on disk, so that a
    /// restart or a long outage loses nothing and the stream continues with the same epoch. Default: absent (the
    /// buffer lives in memory; a restart starts a new epoch). docs/configuration.md, "buffer.persist".
    public struct PersistSection: Sendable, Equatable {
        /// `buffer.persist.dir` (path): directory of the segment files and the `state` file, created (mode 0700) if
        /// missing. Default: nil, meaning `<agent.state_dir>/buffer`.
        public var directory: String?
        /// `buffer.persist.max_bytes` (size, at least `1MiB` and at least `buffer.max_bytes`): disk budget. When it
        /// is full, `buffer.overflow` decides: the oldest records on disk are dropped (counted) or new ones refused.
        /// Default `256MiB`.
        public var maxBytes: Int
        /// `buffer.persist.mode` (`spill` or `always`): `spill` writes only what the uplink cannot deliver (nothing
        /// while the collector keeps up); `always` writes every record before it counts as buffered. Default `spill`.
        public var mode: PersistentBufferSettings.Mode
        /// `buffer.persist.sync_interval` (duration > 0, `always` only): written records are flushed to the device
        /// (`fsync`) at most this often, one flush for everything written meanwhile. Default `1s`.
        public var syncInterval: Duration
        /// `buffer.persist.spill_after` (duration > 0, `spill` only): records still unacknowledged after this long
        /// (up to twice this long) are written to disk. Default `10s`.
        public var spillAfter: Duration

        public init(
            directory: String? = nil, maxBytes: Int = PersistentBufferSettings.defaultMaxBytes,
            mode: PersistentBufferSettings.Mode = .spill, syncInterval: Duration = .seconds(1),
            spillAfter: Duration = .seconds(10)
        ) {
            self.directory = directory
            self.maxBytes = maxBytes
            self.mode = mode
            self.syncInterval = syncInterval
            self.spillAfter = spillAfter
        }

        static let keys = ["dir", "max_bytes", "mode", "sync_interval", "spill_after"]

        static func decode(_ section: ConfigMapping, bufferBytes: Int) -> Self {
            var persist = Self()
            if let directory = section.string("dir") { persist.directory = directory }
            if let bytes = section.size("max_bytes", .atLeast(PersistentBufferSettings.minimumBytes)) {
                persist.maxBytes = bytes
            }
            if let mode = section.enumeration("mode", as: PersistentBufferSettings.Mode.self) { persist.mode = mode }
            if let interval = section.duration("sync_interval", .greaterThan(.zero)) { persist.syncInterval = interval }
            if let spill = section.duration("spill_after", .greaterThan(.zero)) { persist.spillAfter = spill }
            if persist.maxBytes < bufferBytes {
                let format = ConfigValueParsing.format(size:)
                section.decoder.report(
                    .outOfRange, at: section.value("max_bytes")?.mark ?? section.node.mark,
                    path: section.path("max_bytes"),
                    "the disk budget (\(format(persist.maxBytes))) is smaller than the memory buffer, buffer.max_bytes (\(format(bufferBytes)))",
                    hint: "the disk must be able to hold everything the memory buffer holds; raise buffer.persist.max_bytes")
            }
            return persist
        }

        /// The settings the ring's disk side opens with; `stateDirectory` is `agent.state_dir`.
        public func settings(stateDirectory: String, overflow: OverflowPolicy) -> PersistentBufferSettings {
            var base = stateDirectory
            while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
            return PersistentBufferSettings(
                directory: directory ?? base + "/buffer", maxBytes: maxBytes, mode: mode, syncInterval: syncInterval,
                spillAfter: spillAfter, overflow: overflow)
        }
    }
}
