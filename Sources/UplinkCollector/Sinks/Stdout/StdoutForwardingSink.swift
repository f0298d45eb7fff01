import NIOPosix
import UplinkCore

/// `type: stdout`, and the implicit sink of `collector.stdout`: prints one human-readable line per record on
/// standard output (`CollectorOutput`),
///
/// ```
/// 2025-11-21T05:40:18.123456789Z <agent> <src> <metric>{k=v,...} <value> <unit>
/// 2025-11-21T05:40:18.123999000Z <agent> <src> <message> {k=v,...}
/// ```
///
/// The braces are left out when there are no tags or fields, the unit when it is empty. Control characters, DEL,
/// C1 controls, U+2028/U+2029 and backslashes are escaped (`\n`, `\t`, `\r`, `\\`, `\u{1b}`), so one record is
/// always one output line.
///
/// Standard output is not transactional: a batch is printed after its records are in the log (and acknowledged),
/// and the sink's cursor is persisted after the print, so a crash in between prints that batch again at the next
/// start. A failed write (a closed pipe) is retried with the sink's backoff; records wait in the log.
struct StdoutForwardingSink: ForwardingSink {
    let output: any CollectorOutput

    func deliver(_ batch: ForwardBatch) async throws(SinkFailure) {
        var text: [UInt8] = []
        for entry in batch.entries { Self.format(entry.record, agent: entry.agent, to: &text) }
        guard !text.isEmpty else { return }
        let output = self.output
        let bytes = text
        do {
            try await NIOThreadPool.singleton.runIfActive { try bytes.withUnsafeBytes { try output.write($0) } }
        } catch {
            throw SinkFailure(.retry, "\(error)")
        }
    }

    /// Appends the line for `record` (with its `\n`).
    static func format(_ record: Record, agent: String, to text: inout [UInt8]) {
        UTCTimestamp.append(nanoseconds: record.timestamp, to: &text)
        text.append(UInt8(ascii: " "))
        appendEscaped(agent, to: &text)
        text.append(UInt8(ascii: " "))
        appendEscaped(record.source, to: &text)
        text.append(UInt8(ascii: " "))
        switch record.payload {
        case .metric(let metric):
            appendEscaped(metric.name, to: &text)
            appendTags(metric.tags, to: &text)
            text.append(UInt8(ascii: " "))
            appendValue(metric.value, to: &text)
            if !metric.unit.isEmpty {
                text.append(UInt8(ascii: " "))
                appendEscaped(metric.unit, to: &text)
            }
        case .log(let log):
            appendEscaped(log.message, to: &text)
            if !log.fields.isEmpty {
                text.append(UInt8(ascii: " "))
                appendTags(log.fields, to: &text)
            }
        }
        text.append(UInt8(ascii: "\n"))
    }

    private static func appendTags(_ tags: [Tag], to text: inout [UInt8]) {
        guard !tags.isEmpty else { return }
        text.append(UInt8(ascii: "{"))
        for (index, tag) in tags.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ",")) }
            appendEscaped(tag.key, to: &text)
            text.append(UInt8(ascii: "="))
            appendEscaped(tag.value, to: &text)
        }
        text.append(UInt8(ascii: "}"))
    }

    /// Integral values below 2^53 without a fraction, others as Swift prints them; `NaN`, `+Inf`, `-Inf`.
    static func appendValue(_ value: Double, to text: inout [UInt8]) {
        if value.isNaN {
            text.append(contentsOf: "NaN".utf8)
        } else if value.isInfinite {
            text.append(contentsOf: (value < 0 ? "-Inf" : "+Inf").utf8)
        } else if value == value.rounded(.towardZero) && abs(value) < 9_007_199_254_740_992 {
            text.append(contentsOf: String(Int64(value)).utf8)
        } else {
            text.append(contentsOf: value.description.utf8)
        }
    }

    /// Appends `string` with characters that could break the line (or mislead a terminal) escaped.
    static func appendEscaped(_ string: String, to text: inout [UInt8]) {
        for scalar in string.unicodeScalars {
            switch scalar.value {
            case 0x0A: text.append(contentsOf: #"\n"#.utf8)
            case 0x0D: text.append(contentsOf: #"\r"#.utf8)
            case 0x09: text.append(contentsOf: #"\t"#.utf8)
            case 0x5C: text.append(contentsOf: #"\\"#.utf8)
            case 0x00..<0x20, 0x7F..<0xA0, 0x2028, 0x2029:
                text.append(contentsOf: #"\u{"#.utf8)
                text.append(contentsOf: String(scalar.value, radix: 16).utf8)
                text.append(UInt8(ascii: "}"))
            default:
                UTF8.encode(scalar) { text.append($0) }
            }
        }
    }
}
