extension GeneratorSource {
    /// Builds generator messages from a template, rewriting only the counter digits for each record.
    struct MessageBuilder: Sendable {
        /// Digits of the zero-padded counter.
        static let counterDigits = 12
        private static let counterLimit: UInt64 = 1_000_000_000_000  // 10^12

        let sourceName: String
        let recordBytes: Int
        /// `"gen <name> 000000000000 "` followed by `x` filler up to `recordBytes`.
        private var template: [UInt8]
        private let counterOffset: Int

        init(sourceName: String, recordBytes: Int) {
            self.sourceName = sourceName
            self.recordBytes = recordBytes
            var template: [UInt8] = Array("gen ".utf8)
            template.append(contentsOf: sourceName.utf8)
            template.append(UInt8(ascii: " "))
            counterOffset = template.count
            template.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: Self.counterDigits))
            template.append(UInt8(ascii: " "))
            if recordBytes > template.count {
                template.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: recordBytes - template.count))
            }
            self.template = template
        }

        /// Length of the prefix `"gen <name> <12 digits> "` in bytes.
        var prefixBytes: Int {
            counterOffset + Self.counterDigits + 1
        }

        /// The message of record `counter`.
        mutating func message(for counter: UInt64) -> String {
            withMessageBytes(for: counter) { String(decoding: $0, as: UTF8.self) }
        }

        /// Calls `body` with the message of record `counter` as UTF-8 bytes.
        mutating func withMessageBytes<Result>(
            for counter: UInt64, _ body: (UnsafeRawBufferPointer) -> Result
        ) -> Result {
            guard counter < Self.counterLimit else {
                var message = Self.longMessage(sourceName: sourceName, counter: counter, recordBytes: recordBytes)
                return message.withUTF8 { body(UnsafeRawBufferPointer($0)) }
            }
            return template.withUnsafeMutableBytes { template in
                var rest = counter
                var index = counterOffset + Self.counterDigits - 1
                for _ in 0..<Self.counterDigits {
                    template[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                    rest /= 10
                    index -= 1
                }
                return body(UnsafeRawBufferPointer(template))
            }
        }

        /// Counters of 10^12 and more have more than 12 digits; the message grows if it must.
        private static func longMessage(sourceName: String, counter: UInt64, recordBytes: Int) -> String {
            var message = "gen \(sourceName) \(counter) "
            let length = message.utf8.count
            if recordBytes > length {
                message += String(repeating: "x", count: recordBytes - length)
            }
            return message
        }
    }
}
