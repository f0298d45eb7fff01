import UplinkCore

/// The `hwmon` source: temperatures, fan speeds, voltages and power from the hardware monitoring chips under
/// `<sys_root>/class/hwmon`.
///
/// Sensors are discovered once at start. On every tick it emits `hwmon.temperature` (°C), `hwmon.fan_speed`
/// (RPM), `hwmon.voltage` (V) and `hwmon.power` (W), tagged `chip` and `sensor`. Without any readable sensor
/// (a VM) the source logs one warning and returns.
public typealias HwmonSource = ConfiguredSource<HwmonConfig>

extension HwmonKind {
    /// Reads the sensors found at start on every tick.
    public static func sample(_ config: HwmonConfig, with sensor: PeriodicSensorDriver) async {
        await sensor.runReadingChannels(
            HwmonSource.discover(config.hwmonPath), path: config.hwmonPath,
            noneFound: "no readable hwmon*/{temp,fan,in,power}*_input under \(config.hwmonPath) (no hardware monitoring chips on this machine, e.g. a VM, or a wrong sys_root?)")
    }
}
