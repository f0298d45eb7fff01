import UplinkCore

extension HwmonSource {
    /// The attribute families the source reports: file prefix, metric, unit, divisor to the unit.
    static let families: [(prefix: String, metric: String, unit: String, divisor: Double)] = [
        ("temp", "hwmon.temperature", MetricUnit.celsius, 1000),
        ("fan", "hwmon.fan_speed", MetricUnit.rpm, 1),
        ("in", "hwmon.voltage", MetricUnit.volts, 1000),
        ("power", "hwmon.power", MetricUnit.watts, 1_000_000),
    ]

    /// One channel per `<family><n>_input` of every chip under `hwmonPath` that can be read now, in chip order
    /// then family and number order. Kernels before 3.x keep the attributes in `hwmon*/device/`; that
    /// directory is used when the chip's own has none.
    static func discover(_ hwmonPath: String) -> [SysfsChannel] {
        guard let chips = Sysfs.numbered(hwmonPath, prefix: "hwmon") else { return [] }
        var channels: [SysfsChannel] = []
        for chip in chips {
            var directory = joinPath(hwmonPath, chip)
            var names = Sysfs.list(directory) ?? []
            if !names.contains(where: isInput), let deviceNames = Sysfs.list(joinPath(directory, "device")),
                deviceNames.contains(where: isInput)
            {
                directory = joinPath(directory, "device")
                names = deviceNames
            }
            let chipName = Sysfs.readText(joinPath(directory, "name")) ?? Sysfs.readText(joinPath(hwmonPath, chip + "/name")) ?? chip
            for family in families {
                for file in names where isInput(file, prefix: family.prefix) {
                    let base = String(file.dropLast("_input".count))
                    let label = Sysfs.readText(joinPath(directory, base + "_label")).flatMap { $0.isEmpty ? nil : $0 } ?? base
                    var channel = SysfsChannel(
                        path: joinPath(directory, file), metric: family.metric, unit: family.unit, divisor: family.divisor,
                        tags: [Tag("chip", chipName), Tag("sensor", label)])
                    guard channel.reader.readInteger() != nil else { continue }
                    channels.append(channel)
                }
            }
        }
        return channels
    }

    /// Whether `file` is `<some family><digits>_input`.
    static func isInput(_ file: String) -> Bool {
        families.contains { isInput(file, prefix: $0.prefix) }
    }

    /// Whether `file` is `<prefix><digits>_input`.
    static func isInput(_ file: String, prefix: String) -> Bool {
        guard file.hasPrefix(prefix), file.hasSuffix("_input") else { return false }
        let number = file.dropFirst(prefix.count).dropLast("_input".count)
        return !number.isEmpty && number.allSatisfy { $0.isASCII && $0.isNumber }
    }
}
