import UplinkCore

/// The `power` source: batteries, UPSes and mains supplies under `<sys_root>/class/power_supply`.
///
/// Supplies are discovered once at start. On every tick it emits, per battery or UPS, `power.capacity` (%),
/// `power.voltage` (V), `power.current` (A) and `power.power` (W) tagged `supply`, `type` and `status`, and
/// per mains or USB supply `power.online` (1 or 0). Without any supply (a VM, a desktop without UPS) the source
/// logs one warning and returns.
public typealias PowerSource = ConfiguredSource<PowerConfig>

extension PowerConfig {
    /// Reads the supplies found at start on every tick, with the status of batteries and UPSes in their tags.
    public func sample(with sensor: PeriodicSensorDriver) async {
        var supplies = PowerSource.discover(powerSupplyPath)
        guard !supplies.isEmpty else {
            return sensor.disable(
                "no battery, UPS or mains supply under \(powerSupplyPath) (none on this machine, e.g. a VM, or a wrong sys_root?)",
                metadata: ["path": "\(powerSupplyPath)"])
        }
        let (logger, emitter, clock) = (sensor.logger, sensor.emitter, sensor.clock)
        // Tag arrays per supply and status text, built once.
        var tagCache: [[String: [Tag]]] = Array(repeating: [:], count: supplies.count)
        await sensor.run {
            for index in supplies.indices {
                let tags: [Tag]
                if let statusPath = supplies[index].statusPath {
                    let status = Sysfs.readText(statusPath) ?? "Unknown"
                    if let cached = tagCache[index][status] {
                        tags = cached
                    } else {
                        tags = emitter.tags(supplies[index].tags + [Tag("status", status)])
                        tagCache[index][status] = tags
                    }
                } else {
                    if let cached = tagCache[index][""] {
                        tags = cached
                    } else {
                        tags = emitter.tags(supplies[index].tags)
                        tagCache[index][""] = tags
                    }
                }
                for channelIndex in supplies[index].channels.indices {
                    guard let value = supplies[index].channels[channelIndex].read(logger: logger, kind: "power") else {
                        continue
                    }
                    let channel = supplies[index].channels[channelIndex]
                    emitter.emit(
                        channel.metric, value, unit: channel.unit, tags: tags, tagsAreComplete: true,
                        timestamp: clock.nowNanoseconds())
                }
            }
        }
    }
}
