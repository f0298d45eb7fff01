import UplinkConfig

/// What a reload changes: the difference between the configuration the agent runs and a newly loaded file.
///
/// Sources are matched by name: a source whose settings are equal keeps running untouched; a changed one is stopped
/// and started again with its new settings (a tailer resumes from its checkpoint, kept under its name); a removed one
/// is stopped; a new one is started. Uplink settings (`uplink.*`, `agent.id`) apply to a new stream. Settings that
/// shape what was allocated or started at start-up (`buffer.*`, `agent.state_dir`, `agent.metrics_listen`, the
/// embedded collector) are named in `deferred` and apply at the next start; the running values stay.
public struct ReloadPlan: Sendable, Equatable {
    /// The configuration now in force: the new file, with the deferred settings kept at their running values.
    /// Compare the next reload against this.
    public var running: UplinkFile
    /// Sources in the new file only, in its order.
    public var added: [String] = []
    /// Sources in the running configuration only.
    public var removed: [String] = []
    /// Sources in both, with different settings.
    public var changed: [String] = []
    /// Sources in both, with the same settings.
    public var unchanged: [String] = []
    /// Whether the uplink settings changed (a new stream takes over).
    public var uplinkChanged = false
    /// Key paths whose new values apply only at the next start, e.g. `buffer.max_bytes`.
    public var deferred: [String] = []

    /// Whether nothing is applied now (deferred settings aside).
    public var isEmpty: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty && !uplinkChanged }

    /// - Parameters:
    ///   - old: The configuration the agent runs (the `running` of the previous plan, or the file it started with).
    ///   - new: The file just loaded and validated.
    ///   - hasEmbeddedCollector: Whether the process runs an embedded collector (started only at start-up).
    public init(from old: UplinkFile, to new: UplinkFile, hasEmbeddedCollector: Bool) {
        var running = new
        var deferred: [String] = []
        if new.buffer != old.buffer {
            if new.buffer.maxBytes != old.buffer.maxBytes { deferred.append("buffer.max_bytes") }
            if new.buffer.overflow != old.buffer.overflow { deferred.append("buffer.overflow") }
            if deferred.isEmpty { deferred.append("buffer") }
            running.buffer = old.buffer
        }
        if new.agent.stateDirectory != old.agent.stateDirectory {
            deferred.append("agent.state_dir")
            running.agent.stateDirectory = old.agent.stateDirectory
        }
        // The running sources took the budget when they started; a changed one would reach only those a reload
        // starts, and would replace the stream for nothing.
        if new.uplink.linger != old.uplink.linger {
            deferred.append("uplink.linger")
            running.uplink.linger = old.uplink.linger
        }
        if new.agent.metricsListen != old.agent.metricsListen {
            deferred.append("agent.metrics_listen")
            running.agent.metricsListen = old.agent.metricsListen
        }
        // The embedded collector (and so its section) is started once; a file without one ignores the section.
        if hasEmbeddedCollector || new.uplink.target == .embedded, !Self.sameSection(new.collector, old.collector) {
            deferred.append("collector")
            running.collector = old.collector
        }
        if new.uplink.target == .embedded, !hasEmbeddedCollector {
            deferred.append("uplink.url")
            running.uplink.target = old.uplink.target
        }
        self.running = running
        self.deferred = deferred

        let oldSources = Dictionary(old.sources.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        let newNames = Set(running.sources.map(\.name))
        for source in running.sources {
            switch oldSources[source.name] {
            case nil: added.append(source.name)
            case let previous? where previous == source: unchanged.append(source.name)
            case _?: changed.append(source.name)
            }
        }
        removed = old.sources.map(\.name).filter { !newNames.contains($0) }
        // The stream carries the box's labels (remote configuration on): new ones need a new stream.
        func streamLabels(_ file: UplinkFile) -> [String: String] { file.remoteConfig.enabled ? file.remoteConfig.labels : [:] }
        uplinkChanged = running.uplink != old.uplink || running.agent.id != old.agent.id || streamLabels(running) != streamLabels(old)
    }

    private static func sameSection(_ lhs: ConfigNode?, _ rhs: ConfigNode?) -> Bool {
        guard let lhs, let rhs else { return lhs == nil && rhs == nil }
        return lhs.hasSameContent(as: rhs)
    }
}
