import UplinkCore

/// `type: power`: its name, documentation and example; `MountRootSensorConfig` (`PowerConfig`) lists, decodes and
/// holds its keys.
public enum PowerKind: SysfsSensorKind {
    public static let typeName = "power"

    public static let summary = """
        Power supplies, `<sys_root>/class/power_supply/*`, tags `supply` (e.g. `BAT0`) and `type`. Batteries and UPSes, also
        tagged `status` (`Charging`, `Discharging`, `Full`, `Not charging`, `Unknown`): `power.capacity` (`percent`),
        `power.voltage` (`voltage_now`, µV → `volts`), `power.current` (`current_now`, µA → `amperes`), `power.power`
        (`power_now`, µW → `watts`), each when the driver has the file. Mains and USB supplies: `power.online` (1 or 0,
        `count`).
        """

    public static let example = """
          # Batteries, UPSes and mains, <sys_root>/class/power_supply/*: power.capacity (percent), power.voltage (volts),
          # power.current (amperes), power.power (watts), power.online; tags supply, type, status.
          - name: power
            type: power
            interval: 30s
            sys_root: /sys
        """
}
