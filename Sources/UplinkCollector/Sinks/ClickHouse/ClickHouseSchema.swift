import UplinkCore
import UplinkWire

/// The ClickHouse tables of the `clickhouse` sink and their JSONEachRow rows (docs/architecture.md,
/// "ClickHouse"). Works from ClickHouse 18.16 on: no DateTime64 or Map, so the timestamp is `ts` in nanoseconds
/// with `time` (seconds) derived from it, and tags/fields are parallel key and value arrays.
enum ClickHouseSchema {
    static func createLogs(_ table: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(table) (
            agent String, epoch UInt64, seq UInt64, ts Int64,
            time DateTime MATERIALIZED toDateTime(intDiv(ts, 1000000000)),
            source String, message String, field_keys Array(String), field_values Array(String),
            origin UInt64, offset UInt64
        ) ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(time) ORDER BY (agent, epoch, seq)
        """
    }

    static func createMetrics(_ table: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(table) (
            agent String, epoch UInt64, seq UInt64, ts Int64,
            time DateTime MATERIALIZED toDateTime(intDiv(ts, 1000000000)),
            source String, name String, value Float64, unit String, tag_keys Array(String), tag_values Array(String)
        ) ENGINE = ReplacingMergeTree() PARTITION BY toYYYYMM(time) ORDER BY (agent, epoch, seq)
        """
    }

    static func appendLogRow(_ entry: LogEntry, _ line: LogLine, to bytes: inout [UInt8]) {
        appendKey(entry, to: &bytes)
        bytes.append(contentsOf: #","message":"#.utf8)
        WireLineWriter.appendJSONString(line.message, to: &bytes)
        appendTags(line.fields, keys: "field_keys", values: "field_values", to: &bytes)
        bytes.append(contentsOf: #","origin":"#.utf8)
        bytes.append(contentsOf: String(line.origin?.id ?? 0).utf8)
        bytes.append(contentsOf: #","offset":"#.utf8)
        bytes.append(contentsOf: String(line.origin?.offset ?? 0).utf8)
        bytes.append(contentsOf: "}\n".utf8)
    }

    static func appendMetricRow(_ entry: LogEntry, _ metric: Metric, to bytes: inout [UInt8]) {
        appendKey(entry, to: &bytes)
        bytes.append(contentsOf: #","name":"#.utf8)
        WireLineWriter.appendJSONString(metric.name, to: &bytes)
        bytes.append(contentsOf: #","value":"#.utf8)
        // JSONEachRow reads nan and inf as floats.
        bytes.append(contentsOf: (metric.value.isFinite ? metric.value.description : metric.value.isNaN ? "nan" : metric.value < 0 ? "-inf" : "inf").utf8)
        bytes.append(contentsOf: #","unit":"#.utf8)
        WireLineWriter.appendJSONString(metric.unit, to: &bytes)
        appendTags(metric.tags, keys: "tag_keys", values: "tag_values", to: &bytes)
        bytes.append(contentsOf: "}\n".utf8)
    }

    private static func appendKey(_ entry: LogEntry, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: #"{"agent":"#.utf8)
        WireLineWriter.appendJSONString(entry.agent, to: &bytes)
        bytes.append(contentsOf: #","epoch":"#.utf8)
        bytes.append(contentsOf: String(entry.epoch).utf8)
        bytes.append(contentsOf: #","seq":"#.utf8)
        bytes.append(contentsOf: String(entry.sequence).utf8)
        bytes.append(contentsOf: #","ts":"#.utf8)
        bytes.append(contentsOf: String(entry.record.timestamp).utf8)
        bytes.append(contentsOf: #","source":"#.utf8)
        WireLineWriter.appendJSONString(entry.record.source, to: &bytes)
    }

    private static func appendTags(_ tags: [Tag], keys: String, values: String, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: ",\"\(keys)\":[".utf8)
        for (index, tag) in tags.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            WireLineWriter.appendJSONString(tag.key, to: &bytes)
        }
        bytes.append(contentsOf: "],\"\(values)\":[".utf8)
        for (index, tag) in tags.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            WireLineWriter.appendJSONString(tag.value, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
    }
}
