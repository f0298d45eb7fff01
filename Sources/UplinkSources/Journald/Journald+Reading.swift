import UplinkCore

extension JournaldEngine {
    /// The journal fields a record carries, as `NAME=` prefixes, with the record field each becomes (in record order).
    static let selectedFields: [(prefix: [UInt8], tag: String)] = [
        (Array("_SYSTEMD_UNIT=".utf8), "unit"),
        (Array("PRIORITY=".utf8), "priority"),
        (Array("_PID=".utf8), "pid"),
        (Array("_HOSTNAME=".utf8), "hostname"),
        (Array("SYSLOG_IDENTIFIER=".utf8), "syslog_identifier"),
    ]
    static let messagePrefix = Array("MESSAGE=".utf8)
    /// Longest value of a selected field sent (longer ones are cut).
    static let maximumFieldBytes = 1024

    /// Adds the current entry to the batch (sending the batch first when the entry belongs to another origin). Returns
    /// false when the entry could not be read (a corrupt entry: counted, skipped).
    func appendEntry() async -> Bool {
        guard let realtime = journal.realtimeMicroseconds() else {
            statistics.readErrors += 1
            return false
        }
        // The cursor's bytes go to `entryCursor` (no `String` per entry: only a batch's last one is kept).
        guard let origin = journal.withCursor({ bytes in
            entryCursor.removeAll(keepingCapacity: true)
            entryCursor.append(contentsOf: bytes)
            return Self.origin(ofCursor: bytes)
        }) else {
            statistics.readErrors += 1
            return false
        }
        let originID = origin?.id ?? 0
        if !batch.isEmpty, batch.originID != originID { await flush() }
        if stopped { return false }
        batch.originID = originID

        var values: [String?] = Array(repeating: nil, count: Self.selectedFields.count)
        var messageLength = 0
        message.removeAll(keepingCapacity: true)
        let limit = max(1, config.maxLineBytes)
        journal.forEachField { field in
            if Self.hasPrefix(field, Self.messagePrefix) {
                let body = UnsafeRawBufferPointer(rebasing: field[Self.messagePrefix.count...])
                messageLength = body.count
                message.append(contentsOf: UnsafeRawBufferPointer(rebasing: body.prefix(limit)))
                return
            }
            for (index, selected) in Self.selectedFields.enumerated() where values[index] == nil {
                if Self.hasPrefix(field, selected.prefix) {
                    let value = field[selected.prefix.count...].prefix(Self.maximumFieldBytes)
                    values[index] = String(decoding: UnsafeRawBufferPointer(rebasing: value), as: UTF8.self)
                    return
                }
            }
        }
        var fields: [Tag] = []
        for (index, value) in values.enumerated() {
            if let value { fields.append(Tag(Self.selectedFields[index].tag, value)) }
        }
        if messageLength > message.count {
            statistics.truncatedMessages += 1
            fields.append(Tag("truncated", "\(messageLength)"))
        }
        let (nanoseconds, overflow) = Int64(clamping: realtime).multipliedReportingOverflow(by: 1000)
        let timestamp = overflow ? WallClock.nowNanoseconds() : nanoseconds
        message.withUnsafeBytes { bytes in
            batch.append(message: bytes, timestamp: timestamp, originOffset: origin?.offset ?? 0, extraFields: fields)
        }
        swap(&batchCursor, &entryCursor)
        return true
    }

    /// Hands the batch to the sink (waiting for space) and queues its last cursor for the acknowledgement.
    func flush() async {
        guard !batch.isEmpty else { return }
        let outcomes = await sink.emitWaitingForSpace(batch)
        var appended = 0
        for outcome in outcomes.prefix(batch.count) {
            switch outcome {
            case .appended(let sequence):
                lastAppendedSequence = max(lastAppendedSequence, sequence)
                appended += 1
            case .rejectedOversize:
                // Never storable: handled once the entries before it are acknowledged.
                statistics.rejectedOversize += 1
                if !warnedOversize {
                    warnedOversize = true
                    logger.warning(
                        "journald source: an entry is larger than the whole buffer and was left out; lower max_line_bytes or enlarge the buffer"
                    )
                }
            case .droppedNewest:
                stopped = true  // only after cancellation: the rest is read again on the next start
            }
            if stopped { break }
        }
        if outcomes.count < batch.count { stopped = true }
        if !stopped, !batchCursor.isEmpty {
            pending.append((lastAppendedSequence, String(decoding: batchCursor, as: UTF8.self), batch.messageBytes.count))
        }
        statistics.records += appended
        batch.removeAll()
        batchCursor.removeAll(keepingCapacity: true)
    }

    @inline(__always)
    static func hasPrefix(_ field: UnsafeRawBufferPointer, _ prefix: [UInt8]) -> Bool {
        guard field.count >= prefix.count else { return false }
        for index in 0..<prefix.count where field[index] != prefix[index] { return false }
        return true
    }

    /// The record origin of an entry (docs/protocol.md, "Origins"): the id is a hash (FNV-1a, 1 to 2^63-1) of the
    /// cursor's sequence-number id (`s=`, one per journal writer's sequence), the offset the entry's sequence number
    /// (`i=`), which grows with every entry of that sequence. Nil when the cursor has no usable `s=` and `i=`.
    static func origin(ofCursor cursor: UnsafeRawBufferPointer) -> RecordOrigin? {
        var hash: UInt64?
        var sequence: UInt64?
        var start = 0
        while start < cursor.count {
            var end = start
            while end < cursor.count, cursor[end] != UInt8(ascii: ";") { end += 1 }
            if end - start > 2, cursor[start + 1] == UInt8(ascii: "=") {
                let value = UnsafeRawBufferPointer(rebasing: cursor[(start + 2)..<end])
                switch cursor[start] {
                case UInt8(ascii: "s"):
                    var fnv: UInt64 = 0xcbf2_9ce4_8422_2325
                    for byte in value {
                        fnv ^= UInt64(byte)
                        fnv = fnv &* 0x0000_0100_0000_01b3
                    }
                    hash = fnv
                case UInt8(ascii: "i"):
                    sequence = ASCIIHexadecimal.value(value)
                default:
                    break
                }
            }
            start = end + 1
        }
        guard let hash, let sequence, sequence <= UInt64(Int64.max) else { return nil }
        let id = hash & UInt64(Int64.max)
        return RecordOrigin(id: id == 0 ? 1 : id, offset: sequence)
    }
}
