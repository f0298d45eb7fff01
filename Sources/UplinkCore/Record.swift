/// One timestamped observation produced by a source: a metric sample or a log line.
///
/// A record is encoded once, by the source that made it, into a wire frame (see `RecordFrameEncoder`);
/// the ring and the uplink only ever move those bytes.
public struct Record: Sendable, Equatable {
    /// Wall-clock time at which the value was read, in nanoseconds since the Unix epoch (UTC).
    public var timestamp: Int64
    /// Name of the source that produced the record (unique within one agent).
    public var source: String
    /// What was observed.
    public var payload: Payload

    public init(timestamp: Int64, source: String, payload: Payload) {
        self.timestamp = timestamp
        self.source = source
        self.payload = payload
    }

    /// A generous guess of the encoded frame's size, so encoders can reserve once. O(1) for native strings.
    public var estimatedFrameBytes: Int {
        var bytes = 96 + source.utf8.count
        switch payload {
        case .metric(let metric):
            bytes += metric.name.utf8.count + metric.unit.utf8.count + 32
            for tag in metric.tags { bytes += tag.key.utf8.count + tag.value.utf8.count + 8 }
        case .log(let line):
            // Escapes can grow the text; an eighth more covers ordinary lines without a second allocation.
            bytes += line.message.utf8.count + line.message.utf8.count / 8
            for field in line.fields { bytes += field.key.utf8.count + field.value.utf8.count + 8 }
            if line.origin != nil { bytes += 52 }
        }
        return bytes
    }

    /// Builds a metric record.
    public static func metric(
        _ name: String, value: Double, unit: String, tags: [Tag] = [], source: String, timestamp: Int64
    ) -> Record {
        Record(timestamp: timestamp, source: source, payload: .metric(Metric(name: name, value: value, unit: unit, tags: tags)))
    }

    /// Builds a log record.
    public static func log(_ message: String, fields: [Tag] = [], source: String, timestamp: Int64) -> Record {
        Record(timestamp: timestamp, source: source, payload: .log(LogLine(message: message, fields: fields)))
    }
}

/// The body of a record.
public enum Payload: Sendable, Equatable {
    case metric(Metric)
    case log(LogLine)
}

/// A numeric sample.
public struct Metric: Sendable, Equatable {
    /// Dotted metric name, e.g. `cpu.usage` (see docs/protocol.md for the naming convention).
    public var name: String
    /// The sampled value. Non-finite values are sent as JSON `null`.
    public var value: Double
    /// Unit of `value`, e.g. `percent`, `bytes`, `celsius`. Empty when the value has no unit.
    public var unit: String
    /// Dimensions of the sample, in a stable order.
    public var tags: [Tag]

    public init(name: String, value: Double, unit: String, tags: [Tag] = []) {
        self.name = name
        self.value = value
        self.unit = unit
        self.tags = tags
    }
}

/// One line of a log.
public struct LogLine: Sendable, Equatable {
    /// The line's text without its line terminator.
    public var message: String
    /// Extra key/value context, e.g. the file path the line came from.
    public var fields: [Tag]
    /// Where the line ends in the byte stream it was read from, for lines of files (nil otherwise). It lets the
    /// collector recognise a line sent again after an agent crash (docs/protocol.md, "Origins").
    public var origin: RecordOrigin?

    public init(message: String, fields: [Tag] = [], origin: RecordOrigin? = nil) {
        self.message = message
        self.fields = fields
        self.origin = origin
    }
}

/// A position in a byte stream the agent reads: one incarnation of a log file (a new one starts when the file is
/// replaced or truncated).
public struct RecordOrigin: Sendable, Equatable, Hashable {
    /// Identifies the incarnation: a random number from 1 to 2^63-1, chosen when the agent first reads it and
    /// kept in its checkpoints.
    public var id: UInt64
    /// The byte offset just past the record's last byte (its line terminator included) in that incarnation.
    public var offset: UInt64

    public init(id: UInt64, offset: UInt64) {
        self.id = id
        self.offset = offset
    }
}

/// An ordered key/value pair used for metric tags and log fields.
public struct Tag: Sendable, Equatable, Hashable {
    public var key: String
    public var value: String

    public init(_ key: String, _ value: String) {
        self.key = key
        self.value = value
    }
}
