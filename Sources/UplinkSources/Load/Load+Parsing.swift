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
        guard let values = ByteParsing.leadingNonNegativeNumbers(3, in: bytes) else { return nil }
        return LoadAverages(oneMinute: values[0], fiveMinutes: values[1], fifteenMinutes: values[2])
    }

    static func parse(_ bytes: [UInt8]) -> LoadAverages? {
        bytes.withUnsafeBufferPointer { parse($0) }
    }
}
