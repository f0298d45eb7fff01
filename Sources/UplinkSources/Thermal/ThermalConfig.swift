import UplinkCore

/// Configuration of a `thermal` source, which reads `<sys_root>/class/thermal/thermal_zone*/temp`.
///
/// Every tick emits `thermal.temperature` (unit `celsius`) per thermal zone, tagged `zone` (the zone's
/// number) and `type` (the zone's `type` file, e.g. `cpu-thermal`, `x86_pkg_temp`).
public struct ThermalConfig: Sendable, Equatable {
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

    /// The directory holding the zones: `<sysRoot>/class/thermal`.
    public var thermalPath: String { joinPath(sysRoot, "class/thermal") }
}
