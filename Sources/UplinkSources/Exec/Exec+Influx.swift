import UplinkCore

extension ExecSource {
    /// Influx line protocol: `measurement[,tag=value…] field=value[,field=value…] [timestamp]` per line.
    ///
    /// Field values: floats (`1.5`), integers (`42i`, `42u`), booleans (`t`, `true`, `f`, `false`… → 1 or 0);
    /// string fields (`"…"`) are skipped silently. Backslash escapes (`\ `, `\,`, `\=`) are honoured in names.
    /// The timestamp is ignored: records carry the time the output was read. Blank lines and `#` comments are
    /// skipped; a line without a field set, or a field that is neither a number, a boolean nor a string, is
    /// malformed (the line's other fields are kept).
    static func parseInflux(_ output: [UInt8]) -> ParsedOutput {
        var result = ParsedOutput()
        let text = String(decoding: output, as: UTF8.self)
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = rawLine.drop { $0 == " " || $0 == "\t" }
            if line.isEmpty || line.first == "#" { continue }
            let sections = splitUnescaped(Substring(line), separator: " ", maximumParts: 3)
            guard sections.count >= 2 else {
                result.malformed += 1
                continue
            }
            let series = splitUnescaped(sections[0], separator: ",", maximumParts: .max)
            let measurement = unescape(series[0])
            guard !measurement.isEmpty else {
                result.malformed += 1
                continue
            }
            var tags: [Tag] = []
            var badLine = false
            for tag in series.dropFirst() {
                let parts = splitUnescaped(tag, separator: "=", maximumParts: 2)
                guard parts.count == 2, !parts[0].isEmpty else {
                    badLine = true
                    break
                }
                tags.append(Tag(unescape(parts[0]), unescape(parts[1])))
            }
            if badLine {
                result.malformed += 1
                continue
            }
            var fieldProblem = false
            for field in splitUnescaped(sections[1], separator: ",", maximumParts: .max) {
                let parts = splitUnescaped(field, separator: "=", maximumParts: 2)
                guard parts.count == 2, !parts[0].isEmpty else {
                    fieldProblem = true
                    continue
                }
                let value = parts[1]
                if value.first == "\"" { continue }
                guard let number = fieldValue(value) else {
                    fieldProblem = true
                    continue
                }
                result.metrics.append(ParsedMetric(name: measurement + "." + unescape(parts[0]), value: number, tags: tags))
            }
            if fieldProblem { result.malformed += 1 }
        }
        return result
    }

    private static func fieldValue(_ text: Substring) -> Double? {
        switch text {
        case "t", "T", "true", "True", "TRUE": return 1
        case "f", "F", "false", "False", "FALSE": return 0
        default: break
        }
        var digits = text
        if let last = digits.last, last == "i" || last == "u" { digits = digits.dropLast() }
        let bytes = Array(digits.utf8)
        return bytes.withUnsafeBufferPointer { ByteParsing.parseDouble($0, 0..<$0.count) }
    }

    /// Splits at `separator` characters not preceded by a backslash and not inside double quotes.
    static func splitUnescaped(_ text: Substring, separator: Character, maximumParts: Int) -> [Substring] {
        var parts: [Substring] = []
        var start = text.startIndex
        var index = text.startIndex
        var escaped = false
        var quoted = false
        while index < text.endIndex {
            let character = text[index]
            if escaped {
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == separator, !quoted, parts.count < maximumParts - 1 {
                parts.append(text[start..<index])
                start = text.index(after: index)
                if separator == " " {
                    // Runs of blanks separate sections.
                    while start < text.endIndex, text[start] == " " { start = text.index(after: start) }
                    index = start
                    continue
                }
            }
            index = text.index(after: index)
        }
        parts.append(text[start..<text.endIndex])
        return parts
    }

    /// Removes backslash escapes.
    static func unescape(_ text: Substring) -> String {
        guard text.contains("\\") else { return String(text) }
        var result = ""
        var escaped = false
        for character in text {
            if !escaped, character == "\\" {
                escaped = true
                continue
            }
            escaped = false
            result.append(character)
        }
        return result
    }
}
