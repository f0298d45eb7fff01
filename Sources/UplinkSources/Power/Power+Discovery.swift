import UplinkCore

extension PowerSource {
    /// One power supply: its readable attributes and, for batteries and UPSes, its `status` file.
    struct Supply: Sendable {
        var channels: [SysfsChannel]
        /// `<supply>/status`, read every tick into the `status` tag; `nil` for mains supplies.
        let statusPath: String?
        /// `supply` and `type`.
        let tags: [Tag]
    }

    /// Attributes of batteries and UPSes: file, metric, unit, divisor.
    static var batteryAttributes: [(file: String, metric: String, unit: String, divisor: Double)] {
        [
            ("capacity", "power.capacity", MetricUnit.percent, 1),
            ("voltage_now", "power.voltage", MetricUnit.volts, 1_000_000),
            ("current_now", "power.current", MetricUnit.amperes, 1_000_000),
            ("power_now", "power.power", MetricUnit.watts, 1_000_000),
        ]
    }

    /// The supplies under `powerSupplyPath` with at least one readable attribute, in name order. Supplies of
    /// other types (`Wireless`, `USB_PD`, peripheral batteries in mice report `Battery` too and are kept) and
    /// attributes that cannot be read at start are left out.
    static func discover(_ powerSupplyPath: String) -> [Supply] {
        guard let names = Sysfs.list(powerSupplyPath) else { return [] }
        var supplies: [Supply] = []
        for name in names {
            let directory = joinPath(powerSupplyPath, name)
            guard let type = Sysfs.readText(joinPath(directory, "type")) else { continue }
            let tags = [Tag("supply", name), Tag("type", type)]
            let channels: [SysfsChannel]
            var statusPath: String?
            switch type {
            case "Battery", "UPS":
                channels = batteryAttributes.compactMap { attribute in
                    SysfsChannel(
                        readableAt: joinPath(directory, attribute.file), metric: attribute.metric, unit: attribute.unit,
                        divisor: attribute.divisor, tags: tags)
                }
                statusPath = joinPath(directory, "status")
            case "Mains", "USB":
                let online = SysfsChannel(
                    readableAt: joinPath(directory, "online"), metric: "power.online", unit: MetricUnit.count, divisor: 1,
                    tags: tags)
                channels = online.map { [$0] } ?? []
            default:
                continue
            }
            guard !channels.isEmpty else { continue }
            supplies.append(Supply(channels: channels, statusPath: statusPath, tags: tags))
        }
        return supplies
    }
}
