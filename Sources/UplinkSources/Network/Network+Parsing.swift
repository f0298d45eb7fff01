extension NetworkSource {
    /// Columns of the 16 after `name:` that the source reports, in the order of its `DeviceCounters.values`: rx
    /// bytes, rx packets, rx errors, rx drops, tx bytes, tx packets, tx errors, tx drops.
    static var usedColumns: [Int] { [0, 1, 2, 3, 8, 9, 10, 11] }

    /// Parses `/proc/net/dev`: two header lines (recognised by their `|`), then one line per interface,
    /// `  name: 16 counters` (older kernels write `eth0:123` without a blank). Lines without a `:`, with an
    /// empty name, or with fewer than 16 unsigned integers are malformed: skipped and counted.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> DeviceCountersFile {
        var result = DeviceCountersFile()
        let usedColumns = usedColumns
        ByteParsing.forEachLine(in: bytes) { line in
            var blank = FieldScanner(bytes, line: line)
            if blank.isAtEnd() { return }
            var colon: Int?
            for index in line {
                if bytes[index] == UInt8(ascii: "|") { return }  // a header line
                if bytes[index] == UInt8(ascii: ":") {
                    colon = index
                    break
                }
            }
            guard let colon else {
                result.malformedLines += 1
                return
            }
            let nameRange = ByteParsing.trimmed(bytes, line.lowerBound..<colon)
            guard !nameRange.isEmpty,
                let name = String(validating: UnsafeBufferPointer(rebasing: bytes[nameRange]), as: UTF8.self)
            else {
                result.malformedLines += 1
                return
            }
            var fields = FieldScanner(bytes, line: (colon + 1)..<line.upperBound)
            var columns: [UInt64] = []
            columns.reserveCapacity(16)
            while columns.count < 16, let field = fields.next() {
                guard let value = ByteParsing.parseUInt64(bytes, field) else { break }
                columns.append(value)
            }
            guard columns.count == 16 else {
                result.malformedLines += 1
                return
            }
            result.devices.append(DeviceCounters(name: name, values: usedColumns.map { columns[$0] }))
        }
        return result
    }

    static func parse(_ bytes: [UInt8]) -> DeviceCountersFile {
        bytes.withUnsafeBufferPointer { parse($0) }
    }
}
