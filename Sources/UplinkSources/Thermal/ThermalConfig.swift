import UplinkCore

/// Configuration of a `thermal` source, which reads `<sys_root>/class/thermal/thermal_zone*/temp`.
///
/// Every tick emits `thermal.temperature` (unit `celsius`) per thermal zone, tagged `zone` (the zone's
/// number) and `type` (the zone's `type` file, e.g. `cpu-thermal`, `x86_pkg_temp`).
public struct ThermalConfig: PeriodicSensorConfig {
    /// When the source samples and the tags it adds (YAML keys `interval`, `jitter`, `tags`; see `SensorSchedule`).
    public var schedule: SensorSchedule

    /// Directory where sysfs is mounted (YAML key `sys_root`, a path). Default: `"/sys"`.
    public var sysRoot: String

    /// A configuration with the given settings; each default is the one documented on its property.
    public init(interval: Duration = .seconds(10), jitter: Duration = .zero, tags: [Tag] = [], sysRoot: String = "/sys") {
        self.schedule = SensorSchedule(interval: interval, jitter: jitter, tags: tags)
        self.sysRoot = sysRoot
    }

    /// The directory holding the zones: `<sysRoot>/class/thermal`.
    public var thermalPath: String { joinPath(sysRoot, "class/thermal") }
}
