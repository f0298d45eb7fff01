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
        /// Range of the line's own fields in `extraFieldBytes`; empty for a line without any.
        public var extraFieldsStart: Int
        public var extraFieldsEnd: Int

        /// Whether the line has fields of its own (see `LogLineBatch.extraFields(ofLine:)`).
        @inlinable
        public var hasExtraFields: Bool { extraFieldsEnd > extraFieldsStart }
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
    /// The lines' own fields, back to back, each as a key and a value, each behind its length (4 bytes, little
    /// endian): no array or `String` per line. Read them with `forEachExtraField(ofLine:_:)`.
    public private(set) var extraFieldBytes: [UInt8] = []

    public init(source: String, fields: [Tag], originID: UInt64) {
        self.source = source
        self.fields = fields
        self.originID = originID
    }

    public var isEmpty: Bool { lines.isEmpty }
    public var count: Int { lines.count }

    /// Adds one line, with fields of its own written after the batch's fields.
    public mutating func append(
        message: UnsafeRawBufferPointer, timestamp: Int64, originOffset: UInt64, extraFields: [Tag] = []
    ) {
        let extraStart = extraFieldBytes.count
        for field in extraFields {
            var key = field.key
            key.withUTF8 { appendExtraFieldPart(UnsafeRawBufferPointer($0)) }
            var value = field.value
            value.withUTF8 { appendExtraFieldPart(UnsafeRawBufferPointer($0)) }
        }
        appendLine(message: message, timestamp: timestamp, originOffset: originOffset, extraStart: extraStart)
    }

    /// Adds one line with one field of its own, an unsigned integer written in decimal (as a JSON string, like
    /// every field value), without making a `String` for it.
    public mutating func append(
        message: UnsafeRawBufferPointer, timestamp: Int64, originOffset: UInt64, extraField key: StaticString,
        decimal value: UInt64
    ) {
        let extraStart = extraFieldBytes.count
        // The whole field (length, key, length, at most 20 digits) is put together on the stack, back to front, and
        // appended at once.
        let keyCount = key.utf8CodeUnitCount
        withUnsafeTemporaryAllocation(byteCount: keyCount + 28, alignment: 4) { scratch in
            var position = scratch.count
            var rest = value
            repeat {
                position -= 1
                scratch[position] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest != 0
            let digitCount = scratch.count - position
            position -= 4
            scratch.storeBytes(of: UInt32(digitCount).littleEndian, toByteOffset: position, as: UInt32.self)
            position -= keyCount
            UnsafeMutableRawBufferPointer(rebasing: scratch[position..<(position + keyCount)])
                .copyMemory(from: UnsafeRawBufferPointer(start: key.utf8Start, count: keyCount))
            position -= 4
            scratch.storeBytes(of: UInt32(keyCount).littleEndian, toByteOffset: position, as: UInt32.self)
            extraFieldBytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[position...]))
        }
        appendLine(message: message, timestamp: timestamp, originOffset: originOffset, extraStart: extraStart)
    }

    @inline(__always)
    private mutating func appendLine(
        message: UnsafeRawBufferPointer, timestamp: Int64, originOffset: UInt64, extraStart: Int
    ) {
        let start = messageBytes.count
        messageBytes.append(contentsOf: message)
        lines.append(Line(
            start: start, end: messageBytes.count, timestamp: timestamp, originOffset: originOffset,
            extraFieldsStart: extraStart, extraFieldsEnd: extraFieldBytes.count))
    }

    private mutating func appendExtraFieldPart(_ bytes: UnsafeRawBufferPointer) {
        withUnsafeBytes(of: UInt32(truncatingIfNeeded: bytes.count).littleEndian) { extraFieldBytes.append(contentsOf: $0) }
        extraFieldBytes.append(contentsOf: bytes)
    }

    /// Forgets every line, keeping the storage for the next batch.
    public mutating func removeAll() {
        messageBytes.removeAll(keepingCapacity: true)
        lines.removeAll(keepingCapacity: true)
        extraFieldBytes.removeAll(keepingCapacity: true)
    }

    /// The origin of line `index`, nil when the batch has no origin id.
    public func origin(of index: Int) -> RecordOrigin? {
        originID == 0 ? nil : RecordOrigin(id: originID, offset: lines[index].originOffset)
    }

    /// Calls `body` with the key and the value of each of line `index`'s own fields, in order, as UTF-8 bytes
    /// (or whatever bytes a `Tag`'s strings held).
    @inlinable
    public func forEachExtraField(
        ofLine index: Int, _ body: (_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Void
    ) {
        let line = lines[index]
        guard line.hasExtraFields else { return }
        extraFieldBytes.withUnsafeBytes { bytes in
            var position = line.extraFieldsStart
            func part() -> UnsafeRawBufferPointer {
                let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: position, as: UInt32.self)))
                defer { position += 4 + length }
                return UnsafeRawBufferPointer(rebasing: bytes[(position + 4)..<(position + 4 + length)])
            }
            while position < line.extraFieldsEnd {
                let key = part()
                body(key, part())
            }
        }
    }

    /// Line `index`'s own fields.
    public func extraFields(ofLine index: Int) -> [Tag] {
        var tags: [Tag] = []
        forEachExtraField(ofLine: index) { key, value in
            tags.append(Tag(String(decoding: key, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        return tags
    }

    /// Line `index` as a record (replacing ill-formed UTF-8), for sinks that keep records.
    public func record(at index: Int) -> Record {
        let line = lines[index]
        let message = messageBytes[line.start..<line.end].withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        return Record(
            timestamp: line.timestamp, source: source,
            payload: .log(LogLine(
                message: message, fields: line.hasExtraFields ? fields + extraFields(ofLine: index) : fields,
                origin: origin(of: index))))
    }
}
