import UplinkCore

extension ThermalSource {
    /// The zones under `<sys_root>/class/thermal` whose `temp` can be read now, one channel each
    /// (millidegrees → `thermal.temperature` in °C), in zone order. Zones that fail at start (disabled zones
    /// answer `ENODATA`) are left out.
    static func discover(_ thermalPath: String) -> [SysfsChannel] {
        guard let zones = Sysfs.numbered(thermalPath, prefix: "thermal_zone") else { return [] }
        return zones.compactMap { zone in
            let directory = joinPath(thermalPath, zone)
            return SysfsChannel(
                readableAt: joinPath(directory, "temp"), metric: "thermal.temperature", unit: MetricUnit.celsius,
                divisor: 1000,
                tags: [
                    Tag("zone", String(zone.dropFirst("thermal_zone".count))),
                    Tag("type", Sysfs.readText(joinPath(directory, "type")) ?? "unknown"),
                ])
        }
    }
}
