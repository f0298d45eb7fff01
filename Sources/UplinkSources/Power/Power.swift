import UplinkCore

/// The `power` source: batteries, UPSes and mains supplies under `<sys_root>/class/power_supply`.
///
/// Supplies are discovered once at start. On every tick it emits, per battery or UPS, `power.capacity` (%),
/// `power.voltage` (V), `power.current` (A) and `power.power` (W) tagged `supply`, `type` and `status`, and
/// per mains or USB supply `power.online` (1 or 0). Without any supply (a VM, a desktop without UPS) the source
/// logs one warning and returns.
public typealias PowerSource = ConfiguredSource<PowerConfig>

extension PowerKind {
    /// Reads the supplies found at start on every tick, with the status of batteries and UPSes in their tags.
    public static func sample(_ config: PowerConfig, with sensor: PeriodicSensorDriver) async {
        var supplies = PowerSource.discover(config.powerSupplyPath)
        guard !supplies.isEmpty else {
            return sensor.disable(
                "no battery, UPS or mains supply under \(config.powerSupplyPath) (none on this machine, e.g. a VM, or a wrong sys_root?)",
                metadata: ["path": "\(config.powerSupplyPath)"])
        }
        let emitter = sensor.emitter
        // Tag arrays per supply and status text (none for mains), built once.
        var tagCache: [[String: [Tag]]] = Array(repeating: [:], count: supplies.count)
        await sensor.run {
            for index in supplies.indices {
                let status = supplies[index].statusPath.map { Sysfs.readText($0) ?? "Unknown" }
                let tags: [Tag]
                if let cached = tagCache[index][status ?? ""] {
                    tags = cached
                } else {
                    tags = emitter.tags(supplies[index].tags + (status.map { [Tag("status", $0)] } ?? []))
                    tagCache[index][status ?? ""] = tags
                }
                sensor.readChannels(&supplies[index].channels) { _ in tags }
            }
        }
    }
}
