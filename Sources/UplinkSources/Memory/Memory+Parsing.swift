extension MemorySource {
    /// The `/proc/meminfo` fields the memory source uses, converted to bytes (`kB` in meminfo means KiB).
    /// `nil` when the field is absent from the file (or its line was malformed).
    struct Meminfo: Sendable, Equatable {
        var memTotal: UInt64?
        var memFree: UInt64?
        var memAvailable: UInt64?
        var buffers: UInt64?
        var cached: UInt64?
        var swapTotal: UInt64?
        var swapFree: UInt64?
        /// Lines of this read that were skipped as malformed.
        var malformedLines: Int = 0
    }

    /// Parses `/proc/meminfo` (`Key:   value [kB]` per line) without allocating.
    ///
    /// Malformed lines are skipped and counted, the rest of the file is still parsed: a non-blank line without
    /// a `:`, whose key is not a key (letters, digits, `_`, parentheses), whose value is missing or not an
    /// unsigned decimal integer, whose unit is something other than `kB`, that has extra fields, or whose
    /// value in bytes does not fit 64 bits. Fields the source does not use are otherwise ignored; when a key
    /// appears twice the first occurrence wins.
    enum MeminfoParser {
        static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Meminfo {
            var result = Meminfo()
            ByteParsing.forEachLine(in: bytes) { line in
                parseLine(bytes, line, into: &result)
            }
            return result
        }

        static func parse(_ bytes: [UInt8]) -> Meminfo {
            bytes.withUnsafeBufferPointer { parse($0) }
        }

        private static func parseLine(_ bytes: UnsafeBufferPointer<UInt8>, _ line: Range<Int>, into result: inout Meminfo) {
            var blankCheck = FieldScanner(bytes, line: line)
            if blankCheck.isAtEnd() { return }

            var colon: Int?
            for index in line where bytes[index] == UInt8(ascii: ":") {
                colon = index
                break
            }
            guard let colon else {
                result.malformedLines += 1
                return
            }
            var keyScanner = FieldScanner(bytes, line: line.lowerBound..<colon)
            guard let key = keyScanner.next(), keyScanner.isAtEnd(), ByteParsing.isKey(bytes, key) else {
                result.malformedLines += 1
                return
            }
            var fields = FieldScanner(bytes, line: (colon + 1)..<line.upperBound)
            guard let valueField = fields.next(), let number = ByteParsing.parseUInt64(bytes, valueField) else {
                result.malformedLines += 1
                return
            }
            var value = number
            if let unit = fields.next() {
                guard ByteParsing.equals(bytes, unit, "kB"), fields.isAtEnd() else {
                    result.malformedLines += 1
                    return
                }
                let (bytesValue, overflow) = number.multipliedReportingOverflow(by: 1024)
                guard !overflow else {
                    result.malformedLines += 1
                    return
                }
                value = bytesValue
            }
            for (name, field) in meminfoFields where ByteParsing.equals(bytes, key, name) {
                if result[keyPath: field] == nil { result[keyPath: field] = value }
                break
            }
        }
    }

    /// The values the memory source reports, in bytes (and percent for `usedPercent`).
    struct Readings: Sendable, Equatable {
        /// RAM figures; `nil` when `MemTotal` is missing, or both `MemAvailable` and `MemFree` are.
        var memory: Memory?
        /// Swap figures; `nil` when `SwapTotal` or `SwapFree` is missing.
        var swap: Swap?

        struct Memory: Sendable, Equatable {
            /// `MemTotal`.
            var total: UInt64
            /// `MemAvailable`, or `MemFree + Buffers + Cached` on kernels without it (before 3.14).
            var available: UInt64
            /// Whether `available` was estimated because `MemAvailable` was missing.
            var availableIsEstimated: Bool
            /// `total − available` (0 if available exceeds total).
            var used: UInt64
            /// `used / total × 100`; `nil` when `total` is 0.
            var usedPercent: Double?
        }

        struct Swap: Sendable, Equatable {
            /// `SwapTotal`.
            var total: UInt64
            /// `SwapFree`.
            var free: UInt64
            /// `total − free` (0 if free exceeds total).
            var used: UInt64
        }

        init(memory: Memory?, swap: Swap?) {
            self.memory = memory
            self.swap = swap
        }

        init(_ meminfo: Meminfo) {
            memory = Self.memory(meminfo)
            if let total = meminfo.swapTotal, let free = meminfo.swapFree {
                swap = Swap(total: total, free: free, used: total > free ? total - free : 0)
            } else {
                swap = nil
            }
        }

        private static func memory(_ meminfo: Meminfo) -> Memory? {
            guard let total = meminfo.memTotal else { return nil }
            let available: UInt64
            let estimated: Bool
            if let reported = meminfo.memAvailable {
                available = reported
                estimated = false
            } else if let free = meminfo.memFree {
                // The estimate tools used before the kernel provided MemAvailable; saturating on absurd input.
                let (withBuffers, overflow1) = free.addingReportingOverflow(meminfo.buffers ?? 0)
                let (estimate, overflow2) = withBuffers.addingReportingOverflow(meminfo.cached ?? 0)
                available = overflow1 || overflow2 ? .max : estimate
                estimated = true
            } else {
                return nil
            }
            let used = total > available ? total - available : 0
            return Memory(
                total: total, available: available, availableIsEstimated: estimated, used: used,
                usedPercent: total > 0 ? Double(used) / Double(total) * 100 : nil
            )
        }
    }
}

/// The meminfo keys the memory source uses and the `Meminfo` field each fills.
private let meminfoFields: [(name: StaticString, field: any WritableKeyPath<MemorySource.Meminfo, UInt64?> & Sendable)] = [
    ("MemTotal", \.memTotal), ("MemFree", \.memFree), ("MemAvailable", \.memAvailable), ("Buffers", \.buffers),
    ("Cached", \.cached), ("SwapTotal", \.swapTotal), ("SwapFree", \.swapFree),
]
