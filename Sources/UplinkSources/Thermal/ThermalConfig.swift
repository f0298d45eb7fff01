import UplinkCore

/// Configuration of a `thermal` source, which reads `<sys_root>/class/thermal/thermal_zone*/temp`.
///
/// Every tick emits `thermal.temperature` (unit `celsius`) per thermal zone, tagged `zone` (the zone's
/// number) and `type` (the zone's `type` file, e.g. `cpu-thermal`, `x86_pkg_temp`).
public typealias ThermalConfig = MountRootSensorConfig<ThermalKind>

extension ThermalConfig {
    /// The directory holding the zones: `<sys_root>/class/thermal`.
    public var thermalPath: String { joinPath(mountRoot, "class/thermal") }
}
