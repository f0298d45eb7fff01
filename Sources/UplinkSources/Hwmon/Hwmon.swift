import UplinkCore

/// The `hwmon` source: temperatures, fan speeds, voltages and power from the hardware monitoring chips under
/// `<sys_root>/class/hwmon`.
///
/// Sensors are discovered once at start. On every tick it emits `hwmon.temperature` (°C), `hwmon.fan_speed`
/// (RPM), `hwmon.voltage` (V) and `hwmon.power` (W), tagged `chip` and `sensor`. Without any readable sensor
/// (a VM) the source logs one warning and returns.
public struct HwmonSource: Source {
    public let name: String
    public let config: HwmonConfig
    /// The clock ticks and timestamps come from (injectable for tests).
    public let clock: any TickClock

    public init(name: String, config: HwmonConfig = HwmonConfig(), clock: any TickClock = SystemTickClock()) {
        self.name = name
        self.config = config
        self.clock = clock
    }

    public func run(context: SourceContext) async throws {
        let channels = Self.discover(config.hwmonPath)
        guard !channels.isEmpty else {
            context.logger.warning(
                "hwmon source disabled: no readable hwmon*/{temp,fan,in,power}*_input under \(config.hwmonPath) (no hardware monitoring chips on this machine, e.g. a VM, or a wrong sys_root?)",
                metadata: ["path": "\(config.hwmonPath)"])
            return
        }
        await PeriodicSensorDriver(config, source: name, clock: clock, context: context).runReadingChannels(channels)
    }
}
