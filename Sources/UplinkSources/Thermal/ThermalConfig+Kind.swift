import UplinkCore

/// `type: thermal`: its keys (`sys_root` with a longer description), documentation and example; decoding its keys is
/// `SysfsRootSensorConfig`'s.
extension ThermalConfig: SysfsRootSensorConfig {
    public static let typeName = "thermal"

    public static var defaults: ThermalConfig { ThermalConfig() }

    public static let summary = """
        Thermal zones, `<sys_root>/class/thermal/thermal_zone*/temp` (millidegrees): `thermal.temperature` (`celsius`), tags
        `zone` (the zone's number) and `type` (the zone's `type` file, e.g. `cpu-thermal`). Zones are found at start.
        """

    public static let keys = SensorSchedule.keys + [
        .sysRoot("Where sysfs is mounted (e.g. `/host/sys` in a container)."),
    ]

    public static let example = """
          # Thermal zones, <sys_root>/class/thermal/thermal_zone*/temp: thermal.temperature (celsius), tags zone, type.
          - name: thermal
            type: thermal
            interval: 10s
            sys_root: /sys        # where sysfs is mounted (e.g. /host/sys in a container). Default: /sys.
        """
}
