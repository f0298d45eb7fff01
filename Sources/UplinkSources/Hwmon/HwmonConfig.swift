import UplinkCore

/// Configuration of a `hwmon` source, which reads the hardware monitoring chips under
/// `<sys_root>/class/hwmon/hwmon*`.
///
/// Every tick emits, per sensor, tagged `chip` (the chip's `name` file, e.g. `coretemp`, `nct6775`) and
/// `sensor` (its `*_label` file, or the attribute's base name such as `temp1` when there is no label):
/// `hwmon.temperature` (`temp*_input`, millidegrees → unit `celsius`), `hwmon.fan_speed` (`fan*_input`, unit
/// `rpm`), `hwmon.voltage` (`in*_input`, millivolts → unit `volts`) and `hwmon.power` (`power*_input`,
/// microwatts → unit `watts`).
public struct HwmonConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// Directory where sysfs is mounted (YAML key `sys_root`, a path). Default: `"/sys"`.
    public var sysRoot: String

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], sysRoot: String = "/sys") {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.sysRoot = sysRoot
    }

    /// The directory holding the chips: `<sysRoot>/class/hwmon`.
    public var hwmonPath: String { joinPath(sysRoot, "class/hwmon") }
}
