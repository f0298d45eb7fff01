extension DiskIOSource {
    /// Parses `/proc/diskstats` into each device's reads completed, sectors read, writes completed and sectors
    /// written: `major minor name` then 11 (kernel 2.6), 15 (4.18+) or 17 (5.5+) counters;
    /// partitions on 2.6 kernels before 2.6.25 have 4 (reads, sectors read, writes, sectors written).
    /// Lines with fewer than 3 leading fields, or with a counter count that is none of those, are malformed:
    /// skipped and counted.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> DeviceCountersFile {
        var result = DeviceCountersFile()
        ByteParsing.forEachLine(in: bytes) { line in
            var fields = FieldScanner(bytes, line: line)
            if fields.isAtEnd() { return }
            guard let major = fields.next(), ByteParsing.parseUInt64(bytes, major) != nil,
                let minor = fields.next(), ByteParsing.parseUInt64(bytes, minor) != nil,
                let nameRange = fields.next(),
                let name = String(validating: UnsafeBufferPointer(rebasing: bytes[nameRange]), as: UTF8.self)
            else {
                result.malformedLines += 1
                return
            }
            var counters: [UInt64] = []
            counters.reserveCapacity(20)
            while let field = fields.next() {
                guard let value = ByteParsing.parseUInt64(bytes, field), counters.count < 32 else {
                    result.malformedLines += 1
                    return
                }
                counters.append(value)
            }
            switch counters.count {
            case 4:
                result.devices.append(DeviceCounters(name: name, values: counters))
            case 11...:
                result.devices.append(DeviceCounters(name: name, values: [counters[0], counters[2], counters[4], counters[6]]))
            default:
                result.malformedLines += 1
            }
        }
        return result
    }

    static func parse(_ bytes: [UInt8]) -> DeviceCountersFile {
        bytes.withUnsafeBufferPointer { parse($0) }
    }

    /// Whether `name` is a whole disk rather than a partition, a loop device or a RAM disk (by the kernel's
    /// naming rules: `sda1`, `vdb2`, `xvda1`, `hda3` and `<disk-ending-in-a-digit>p<n>` such as `nvme0n1p2`,
    /// `mmcblk0p1` are partitions; `mmcblk0boot0` and `mmcblk0rpmb` are eMMC hardware partitions).
    static func isWholeDisk(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let last = bytes.last else { return false }
        if name.hasPrefix("loop") || name.hasPrefix("ram") { return false }
        if name.hasPrefix("mmcblk"), name.contains("boot") || name.hasSuffix("rpmb") { return false }
        if ByteParsing.isDigit(last), name.hasPrefix("sd") || name.hasPrefix("hd") || name.hasPrefix("vd") || name.hasPrefix("xvd") {
            return false
        }
        // `<…digit>p<digits>`
        var index = bytes.count - 1
        while index >= 0, ByteParsing.isDigit(bytes[index]) { index -= 1 }
        if index < bytes.count - 1, index >= 1, bytes[index] == UInt8(ascii: "p"), ByteParsing.isDigit(bytes[index - 1]) {
            return false
        }
        return true
    }
}
