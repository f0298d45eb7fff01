import UplinkCore

/// The `thermal` source: the kernel's thermal zones, `<sys_root>/class/thermal/thermal_zone*/temp`.
///
/// Zones are discovered once at start. On every tick it emits `thermal.temperature` (°C) per zone, tagged
/// `zone` and `type`. Without any readable zone (a VM) the source logs one warning and returns.
public typealias ThermalSource = ConfiguredSource<ThermalConfig>

extension ThermalKind {
    /// Reads the zones found at start on every tick.
    public static func sample(_ config: ThermalConfig, with sensor: PeriodicSensorDriver) async {
        await sensor.runReadingChannels(
            ThermalSource.discover(config.thermalPath), path: config.thermalPath,
            noneFound: "no readable thermal_zone*/temp under \(config.thermalPath) (no thermal zones on this machine, e.g. a VM, or a wrong sys_root?)")
    }
}
