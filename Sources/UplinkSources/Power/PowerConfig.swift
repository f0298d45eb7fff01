import UplinkCore

/// Configuration of a `power` source, which reads the power supplies under `<sys_root>/class/power_supply`.
///
/// Every tick emits, per supply (tags `supply`, the directory name such as `BAT0`, and `type`):
/// - batteries and UPSes (`type` `Battery` or `UPS`), also tagged `status` (`Charging`, `Discharging`, `Full`,
///   `Not charging`, `Unknown`, read every tick): `power.capacity` (`capacity`, unit `percent`),
///   `power.voltage` (`voltage_now`, µV → unit `volts`), `power.current` (`current_now`, µA → unit `amperes`),
///   `power.power` (`power_now`, µW → unit `watts`), each when the driver provides the file;
/// - mains and USB supplies (`Mains`, `USB`): `power.online` (`online`, 1 or 0, unit `count`).
public typealias PowerConfig = MountRootSensorConfig<PowerKind>

extension PowerConfig {
    /// The directory holding the supplies: `<sys_root>/class/power_supply`.
    public var powerSupplyPath: String { joinPath(mountRoot, "class/power_supply") }
}
