extension LoadSource {
    /// The three load averages of `/proc/loadavg` (`0.52 0.58 0.59 2/1234 56789`).
    struct LoadAverages: Sendable, Equatable {
        var oneMinute: Double
        var fiveMinutes: Double
        var fifteenMinutes: Double
    }

    /// Parses the first line of `/proc/loadavg`. `nil` (one malformed line) when it does not start with three
    /// non-negative decimal numbers; the remaining fields (running/total tasks, last pid) are ignored.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> LoadAverages? {
        var firstLine: Range<Int>?
        ByteParsing.forEachLine(in: bytes) { line in
            if firstLine == nil { firstLine = line }
        }
        guard let line = firstLine else { return nil }
        var fields = FieldScanner(bytes, line: line)
        var values: [Double] = []
        values.reserveCapacity(3)
        for _ in 0..<3 {
            guard let field = fields.next(), let value = ByteParsing.parseDouble(bytes, field), value >= 0 else {
                return nil
            }
            values.append(value)
        }
        return LoadAverages(oneMinute: values[0], fiveMinutes: values[1], fifteenMinutes: values[2])
    }

    static func parse(_ bytes: [UInt8]) -> LoadAverages? {
        bytes.withUnsafeBufferPointer { parse($0) }
    }
}
