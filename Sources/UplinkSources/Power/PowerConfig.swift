import UplinkCore

/// Configuration of a `power` source, which reads the power supplies under `<sys_root>/class/power_supply`.
///
/// Every tick emits, per supply (tags `supply`, the directory name such as `BAT0`, and `type`):
/// - batteries and UPSes (`type` `Battery` or `UPS`), also tagged `status` (`Charging`, `Discharging`, `Full`,
///   `Not charging`, `Unknown`, read every tick): `power.capacity` (`capacity`, unit `percent`),
///   `power.voltage` (`voltage_now`, µV → unit `volts`), `power.current` (`current_now`, µA → unit `amperes`),
///   `power.power` (`power_now`, µW → unit `watts`), each when the driver provides the file;
/// - mains and USB supplies (`Mains`, `USB`): `power.online` (`online`, 1 or 0, unit `count`).
public struct PowerConfig: Sendable, Equatable {
    /// Time between two samples (YAML key `interval`, a duration). Default: 10 seconds.
    public var interval: Duration
    /// Largest random delay after each aligned tick (YAML key `jitter`). Default: 0 (none).
    public var jitter: Duration
    /// Tags added to every metric of the source (YAML key `tags`, a mapping of strings). Default: none.
    public var tags: [Tag]
    /// Directory where sysfs is mounted (YAML key `sys_root`, a path). Default: `"/sys"`.
    public var sysRoot: String

    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], sysRoot: String = "/sys") {
        self.interval = interval
        self.jitter = jitter
        self.tags = tags
        self.sysRoot = sysRoot
    }

    /// The directory holding the supplies: `<sysRoot>/class/power_supply`.
    public var powerSupplyPath: String { joinPath(sysRoot, "class/power_supply") }
}
