/// Log lines read from one file incarnation, kept as raw bytes so a source can hand hundreds of lines to its sink
/// at once without making a `String` or a `Record` per line.
///
/// Every line shares the batch's `source`, `fields` and origin id; each has its own timestamp, the offset just past
/// it in the file, and optional extra fields (e.g. a truncation mark). Messages may hold any bytes: the encoder
/// replaces ill-formed UTF-8.
public struct LogLineBatch: Sendable {
    /// One line's place in `messageBytes` and its own values.
    public struct Line: Sendable, Equatable {
        /// Range of the message in `messageBytes`.
        public var start: Int
        public var end: Int
        /// When the line was read, nanoseconds since the Unix epoch.
        public var timestamp: Int64
        /// The byte offset just past the line (terminator included) in its file incarnation.
        public var originOffset: UInt64
        /// Fields of this line only, written after the batch's fields.
        public var extraFields: [Tag]
    }

    /// The configured source name.
    public var source: String
    /// Fields every line carries (the file path).
    public var fields: [Tag]
    /// The file incarnation's origin id (see `RecordOrigin`); 0 for lines without an origin.
    public var originID: UInt64
    /// The messages, back to back.
    public private(set) var messageBytes: [UInt8] = []
    /// The lines, in file order.
    public private(set) var lines: [Line] = []

    public init(source: String, fields: [Tag], originID: UInt64) {
        self.source = source
        self.fields = fields
        self.originID = originID
    }

    public var isEmpty: Bool { lines.isEmpty }
    public var count: Int { lines.count }

    /// Adds one line.
    public mutating func append(
        message: UnsafeRawBufferPointer, timestamp: Int64, originOffset: UInt64, extraFields: [Tag] = []
    ) {
        let start = messageBytes.count
        messageBytes.append(contentsOf: message)
        lines.append(Line(
            start: start, end: messageBytes.count, timestamp: timestamp, originOffset: originOffset,
            extraFields: extraFields))
    }

    /// Forgets every line, keeping the storage for the next batch.
    public mutating func removeAll() {
        messageBytes.removeAll(keepingCapacity: true)
        lines.removeAll(keepingCapacity: true)
    }

    /// The origin of line `index`, nil when the batch has no origin id.
    public func origin(of index: Int) -> RecordOrigin? {
        originID == 0 ? nil : RecordOrigin(id: originID, offset: lines[index].originOffset)
    }

    /// Line `index` as a record (replacing ill-formed UTF-8), for sinks that keep records.
    public func record(at index: Int) -> Record {
        let line = lines[index]
        let message = messageBytes[line.start..<line.end].withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        return Record(
            timestamp: line.timestamp, source: source,
            payload: .log(LogLine(message: message, fields: fields + line.extraFields, origin: origin(of: index))))
    }
}
