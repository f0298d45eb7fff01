import UplinkCore

extension HwmonSource {
    /// The attribute families the source reports: file prefix, metric, unit, divisor to the unit.
    static var families: [(prefix: String, metric: String, unit: String, divisor: Double)] {
        [
            ("temp", "hwmon.temperature", MetricUnit.celsius, 1000),
            ("fan", "hwmon.fan_speed", MetricUnit.rpm, 1),
            ("in", "hwmon.voltage", MetricUnit.volts, 1000),
            ("power", "hwmon.power", MetricUnit.watts, 1_000_000),
        ]
    }

    /// One channel per `<family><n>_input` of every chip under `hwmonPath` that can be read now, in chip order
    /// then family and number order. Kernels before 3.x keep the attributes in `hwmon*/device/`; that
    /// directory is used when the chip's own has none.
    ///
    /// The `chip` tag is the chip's `name`. Several chips can share one (two NVMe drives are both `nvme`); their
    /// tags become `<name>-<device>`, the device being the last part of the chip's `device` link (`nvme-nvme0`),
    /// or `<name>-hwmon<N>` without one, so that each chip has its own series.
    static func discover(_ hwmonPath: String) -> [SysfsChannel] {
        guard let chipDirectories = Sysfs.numbered(hwmonPath, prefix: "hwmon") else { return [] }
        let chips = chipDirectories.map { entry -> HwmonChip in
            var directory = joinPath(hwmonPath, entry)
            var attributes = Sysfs.list(directory) ?? []
            if !attributes.contains(where: isInput), let deviceNames = Sysfs.list(joinPath(directory, "device")),
                deviceNames.contains(where: isInput)
            {
                directory = joinPath(directory, "device")
                attributes = deviceNames
            }
            let name = Sysfs.readText(joinPath(directory, "name")) ?? Sysfs.readText(joinPath(hwmonPath, entry + "/name")) ?? entry
            return HwmonChip(entry: entry, directory: directory, attributes: attributes, name: name)
        }
        var chipsPerName: [String: Int] = [:]
        for chip in chips { chipsPerName[chip.name, default: 0] += 1 }
        var channels: [SysfsChannel] = []
        for chip in chips {
            let (directory, names) = (chip.directory, chip.attributes)
            var chipName = chip.name
            if chipsPerName[chip.name, default: 0] > 1 {
                chipName += "-" + (Sysfs.linkTargetName(joinPath(hwmonPath, chip.entry + "/device")) ?? chip.entry)
            }
            for family in families {
                for file in names where isInput(file, prefix: family.prefix) {
                    let base = String(file.dropLast("_input".count))
                    let label = Sysfs.readText(joinPath(directory, base + "_label")).flatMap { $0.isEmpty ? nil : $0 } ?? base
                    guard let channel = SysfsChannel(
                        readableAt: joinPath(directory, file), metric: family.metric, unit: family.unit,
                        divisor: family.divisor, tags: [Tag("chip", chipName), Tag("sensor", label)])
                    else { continue }
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

/// One chip directory found by `HwmonSource.discover`: its entry under the hwmon directory, the directory holding
/// its attributes, their names, and the chip's `name`.
private struct HwmonChip {
    var entry: String
    var directory: String
    var attributes: [String]
    var name: String
}
