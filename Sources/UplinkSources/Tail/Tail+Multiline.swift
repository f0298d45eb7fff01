/// Joins lines into multi-line records: a line that does not match the start pattern is appended, after a `\n`,
/// to the record before it. The record being built is sent when the next start line arrives, when its file ends
/// (closed after rotation or deletion), or after the multi-line timeout.
struct TailMultiline {
    private let startPattern: Regex<AnyRegexOutput>
    private let maxBytes: Int
    /// The record being built, cut to `maxBytes`.
    private var pending: [UInt8] = []
    /// Its length before cutting.
    private var pendingLength = 0
    /// Offset just past its last line.
    private var pendingEnd: UInt64 = 0
    private(set) var hasPending = false
    /// When its last line was added.
    private(set) var lastAppend: ContinuousClock.Instant?

    init(startPattern: Regex<AnyRegexOutput>, maxBytes: Int) {
        self.startPattern = startPattern
        self.maxBytes = max(1, maxBytes)
    }

    /// Whether a line starts a new record.
    func isStart(_ message: UnsafeRawBufferPointer) -> Bool {
        let text = String(decoding: message, as: UTF8.self)
        return (try? startPattern.firstMatch(in: text)) != nil
    }

    /// Adds one line; calls `record` with the previous record when this line starts a new one.
    mutating func add(
        _ message: UnsafeRawBufferPointer, endOffset: UInt64, originalLength: Int, now: ContinuousClock.Instant,
        _ record: (_ message: UnsafeRawBufferPointer, _ endOffset: UInt64, _ originalLength: Int) -> Void
    ) {
        if hasPending, !isStart(message) {
            pendingLength += 1
            if pending.count < maxBytes { pending.append(UInt8(ascii: "\n")) }
            append(message, length: originalLength)
        } else {
            flush(record)
            hasPending = true
            append(message, length: originalLength)
        }
        pendingEnd = endOffset
        lastAppend = now
    }

    /// Sends the record being built, if any.
    mutating func flush(_ record: (_ message: UnsafeRawBufferPointer, _ endOffset: UInt64, _ originalLength: Int) -> Void) {
        guard hasPending else { return }
        pending.withUnsafeBytes { record($0, pendingEnd, pendingLength) }
        reset()
    }

    /// Forgets the record being built.
    mutating func reset() {
        pending.removeAll(keepingCapacity: pending.count <= 4096)
        pendingLength = 0
        hasPending = false
        lastAppend = nil
    }

    private mutating func append(_ bytes: UnsafeRawBufferPointer, length: Int) {
        pendingLength += length
        let room = maxBytes - pending.count
        if room > 0 { pending.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0..<min(room, bytes.count)])) }
    }
}
