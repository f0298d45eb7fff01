import UplinkCore

/// Configuration of a `power` source, which reads the power supplies under `<sys_root>/class/power_supply`.
///
/// Every tick emits, per supply (tags `supply`, the directory name such as `BAT0`, and `type`):
/// - batteries and UPSes (`type` `Battery` or `UPS`), also tagged `status` (`Charging`, `Discharging`, `Full`,
///   `Not charging`, `Unknown`, read every tick): `power.capacity` (`capacity`, unit `percent`),
///   `power.voltage` (`voltage_now`, µV → unit `volts`), `power.current` (`current_now`, µA → unit `amperes`),
///   `power.power` (`power_now`, µW → unit `watts`), each when the driver provides the file;
/// - mains and USB supplies (`Mains`, `USB`): `power.online` (`online`, 1 or 0, unit `count`).
public struct PowerConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// Directory where sysfs is mounted (YAML key `sys_root`, a path). Default: `"/sys"`.
    public var sysRoot: String

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], sysRoot: String = "/sys") {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.sysRoot = sysRoot
    }

    /// The directory holding the supplies: `<sysRoot>/class/power_supply`.
    public var powerSupplyPath: String { joinPath(sysRoot, "class/power_supply") }
}
