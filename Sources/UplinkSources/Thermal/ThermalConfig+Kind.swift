import UplinkCore

/// `type: thermal`: its name, documentation and example; `MountRootSensorConfig` (`ThermalConfig`) lists, decodes and
/// holds its keys.
public enum ThermalKind: SysfsSensorKind {
    public static let typeName = "thermal"

    public static let summary = """
        Thermal zones, `<sys_root>/class/thermal/thermal_zone*/temp` (millidegrees): `thermal.temperature` (`celsius`), tags
        `zone` (the zone's number) and `type` (the zone's `type` file, e.g. `cpu-thermal`). Zones are found at start.
        """

    public static var mountRootKey: SourceKey { .sysRoot("Where sysfs is mounted (e.g. `/host/sys` in a container).") }

    public static let example = """
          # Thermal zones, <sys_root>/class/thermal/thermal_zone*/temp: thermal.temperature (celsius), tags zone, type.
          - name: thermal
            type: thermal
            interval: 10s
            sys_root: /sys        # where sysfs is mounted (e.g. /host/sys in a container). Default: /sys.
        """
}
