import UplinkCore

/// `type: thermal`: its mount point key and setting, documentation and example; `MountRootSensorConfig` lists and
/// decodes its keys.
extension ThermalConfig: MountRootSensorConfig {
    public static let typeName = "thermal"

    public static var defaults: ThermalConfig { ThermalConfig() }

    public static let summary = """
        Thermal zones, `<sys_root>/class/thermal/thermal_zone*/temp` (millidegrees): `thermal.temperature` (`celsius`), tags
        `zone` (the zone's number) and `type` (the zone's `type` file, e.g. `cpu-thermal`). Zones are found at start.
        """

    static var mountRoot: (key: SourceKey, setting: WritableKeyPath<ThermalConfig, String>) {
        (.sysRoot("Where sysfs is mounted (e.g. `/host/sys` in a container)."), \.sysRoot)
    }

    public static let example = """
          # Thermal zones, <sys_root>/class/thermal/thermal_zone*/temp: thermal.temperature (celsius), tags zone, type.
          - name: thermal
            type: thermal
            interval: 10s
            sys_root: /sys        # where sysfs is mounted (e.g. /host/sys in a container). Default: /sys.
        """
}
