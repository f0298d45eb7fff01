import UplinkCore

/// `type: hwmon`: its name, documentation and example; `MountRootSensorConfig` (`HwmonConfig`) lists, decodes and
/// holds its keys.
public enum HwmonKind: SysfsSensorKind {
    public static let typeName = "hwmon"

    public static let summary = """
        Hardware monitoring chips, `<sys_root>/class/hwmon/hwmon*` (or their `device/` directory on old kernels), tags `chip`
        (the chip's `name`) and `sensor` (the attribute's `*_label`, or its base name such as `temp1`):
        `hwmon.temperature` (`temp*_input`, m°C → `celsius`), `hwmon.fan_speed` (`fan*_input`, `rpm`), `hwmon.voltage`
        (`in*_input`, mV → `volts`), `hwmon.power` (`power*_input`, µW → `watts`). Sensors are found at start; one that
        cannot be read then is left out, one that stops answering later is skipped (noted once).
        """

    public static let example = """
          # Hardware monitoring chips, <sys_root>/class/hwmon/hwmon*: hwmon.temperature (celsius), hwmon.fan_speed (rpm),
          # hwmon.voltage (volts), hwmon.power (watts), tags chip and sensor.
          - name: hwmon
            type: hwmon
            interval: 10s
            sys_root: /sys
        """
}
