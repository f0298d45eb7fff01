import UplinkCore

/// The `thermal` source: the kernel's thermal zones, `<sys_root>/class/thermal/thermal_zone*/temp`.
///
/// Zones are discovered once at start. On every tick it emits `thermal.temperature` (°C) per zone, tagged
/// `zone` and `type`. Without any readable zone (a VM) the source logs one warning and returns.
public struct ThermalSource: Source {
    public let name: String
    public let config: ThermalConfig
    /// The clock ticks and timestamps come from (injectable for tests).
    public let clock: any TickClock

    public init(name: String, config: ThermalConfig = ThermalConfig(), clock: any TickClock = SystemTickClock()) {
        self.name = name
        self.config = config
        self.clock = clock
    }

    public func run(context: SourceContext) async throws {
        let channels = Self.discover(config.thermalPath)
        guard !channels.isEmpty else {
            context.logger.warning(
                "thermal source disabled: no readable thermal_zone*/temp under \(config.thermalPath) (no thermal zones on this machine, e.g. a VM, or a wrong sys_root?)",
                metadata: ["path": "\(config.thermalPath)"])
            return
        }
        await PeriodicSensorDriver(config, source: name, clock: clock, context: context).runReadingChannels(channels)
    }
}
