import UplinkCore

/// Configuration of a `hwmon` source, which reads the hardware monitoring chips under
/// `<sys_root>/class/hwmon/hwmon*`.
///
/// Every tick emits, per sensor, tagged `chip` (the chip's `name` file, e.g. `coretemp`, `nct6775`) and
/// `sensor` (its `*_label` file, or the attribute's base name such as `temp1` when there is no label):
/// `hwmon.temperature` (`temp*_input`, millidegrees → unit `celsius`), `hwmon.fan_speed` (`fan*_input`, unit
/// `rpm`), `hwmon.voltage` (`in*_input`, millivolts → unit `volts`) and `hwmon.power` (`power*_input`,
/// microwatts → unit `watts`).
public struct HwmonConfig: Sendable, Equatable {
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

    /// The directory holding the chips: `<sysRoot>/class/hwmon`.
    public var hwmonPath: String { joinPath(sysRoot, "class/hwmon") }
}
