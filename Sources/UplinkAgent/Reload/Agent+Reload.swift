import UplinkTransport

extension Agent {
    /// Applies a reload without stopping what did not change: stops removed and changed sources (each has
    /// returned before this goes on), starts changed and added ones, and when the uplink settings changed hands over
    /// to a new uplink on the same ring and epoch (the current stream drains first, see `UplinkHost`).
    ///
    /// - Parameters:
    ///   - plan: What changed (`ReloadPlan(from:to:hasEmbeddedCollector:)`).
    ///   - configuration: The agent configuration of `plan.running`. Its buffer settings, state directory and epoch
    ///     are not used: the running ones stay.
    public func apply(_ plan: ReloadPlan, configuration: AgentConfiguration) async {
        for name in plan.removed + plan.changed {
            await sourceSupervisor.stop(name)
        }
        let starting = Set(plan.added + plan.changed)
        for source in configuration.sources where starting.contains(source.name) {
            sourceSupervisor.start(
                source.name, kind: source.config.kind.typeName,
                makeSourceService(
                    source, stateDirectory: self.configuration.stateDirectory, linger: configuration.uplink.linger))
        }
        if plan.uplinkChanged {
            var settings = configuration.uplink
            // The same stream continues: the collector resumes it where its marks say.
            settings.epoch = uplinkHost.newest.configuration.epoch
            await uplinkHost.replace(
                with: Uplink(
                    configuration: settings, ring: ring, logger: logger, eventLoop: eventLoop,
                    remoteConfig: remoteConfigRelay))
        }
    }

    /// The names of the running sources, in start order.
    public var runningSourceNames: [String] { sourceSupervisor.names }
}
