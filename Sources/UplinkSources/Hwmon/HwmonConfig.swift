import UplinkCore

/// Configuration of a `hwmon` source, which reads the hardware monitoring chips under
/// `<sys_root>/class/hwmon/hwmon*`.
///
/// Every tick emits, per sensor, tagged `chip` (the chip's `name` file, e.g. `coretemp`, `nct6775`) and
/// `sensor` (its `*_label` file, or the attribute's base name such as `temp1` when there is no label):
/// `hwmon.temperature` (`temp*_input`, millidegrees → unit `celsius`), `hwmon.fan_speed` (`fan*_input`, unit
/// `rpm`), `hwmon.voltage` (`in*_input`, millivolts → unit `volts`) and `hwmon.power` (`power*_input`,
/// microwatts → unit `watts`).
public typealias HwmonConfig = MountRootSensorConfig<HwmonKind>

extension HwmonConfig {
    /// The directory holding the chips: `<sys_root>/class/hwmon`.
    public var hwmonPath: String { joinPath(mountRoot, "class/hwmon") }
}
