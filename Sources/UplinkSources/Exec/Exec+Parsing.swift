import UplinkCore

extension ExecSource {
    /// One metric parsed from a command's output, before the configured tags are added.
    struct ParsedMetric: Sendable, Equatable {
        var name: String
        var value: Double
        var tags: [Tag] = []
    }

    /// What a command printed, as metrics, and how many lines (or pairs, or values) could not be used.
    struct ParsedOutput: Sendable, Equatable {
        var metrics: [ParsedMetric] = []
        var malformed = 0
    }

    /// Parses `output` in `config.format`.
    static func parse(_ output: [UInt8], config: ExecConfig) -> ParsedOutput {
        switch config.format {
        case .number: parseNumber(output, metric: config.metric)
        case .keyvalue: parseKeyValue(output, prefix: config.prefix)
        case .influx: parseInflux(output)
        case .json: parseJSON(output, prefix: config.prefix, metric: config.metric)
        }
    }

    /// The whole output, trimmed, as one number.
    static func parseNumber(_ output: [UInt8], metric: String) -> ParsedOutput {
        output.withUnsafeBufferPointer { bytes in
            guard let value = ByteParsing.parseDouble(bytes, ByteParsing.trimmed(bytes, 0..<bytes.count)) else {
                return ParsedOutput(metrics: [], malformed: 1)
            }
            return ParsedOutput(metrics: [ParsedMetric(name: metric, value: value)])
        }
    }

    /// `key=value` pairs separated by blanks, commas, semicolons or line breaks. A pair without `=`, with an
    /// empty key or a value that is not a number is malformed.
    static func parseKeyValue(_ output: [UInt8], prefix: String) -> ParsedOutput {
        var result = ParsedOutput()
        let text = String(decoding: output, as: UTF8.self)
        let separators: Set<Character> = [" ", "\t", "\n", "\r", ",", ";"]
        for pair in text.split(whereSeparator: { separators.contains($0) }) {
            guard let equals = pair.firstIndex(of: "=") else {
                result.malformed += 1
                continue
            }
            let key = pair[..<equals]
            let valueText = Array(pair[pair.index(after: equals)...].utf8)
            let value = valueText.withUnsafeBufferPointer { ByteParsing.parseDouble($0, 0..<$0.count) }
            guard !key.isEmpty, let value else {
                result.malformed += 1
                continue
            }
            result.metrics.append(ParsedMetric(name: joinName(prefix, String(key)), value: value))
        }
        return result
    }

    /// `prefix.key`, or `key` when the prefix is empty.
    static func joinName(_ prefix: String, _ key: String) -> String {
        prefix.isEmpty ? key : prefix + "." + key
    }
}
