/// Turns a record into the bytes the circular buffer stores for it: its wire frame without the sequence number,
/// which the ring assigns on append and the uplink writes in front of the frame when it sends it.
///
/// Implemented by `UplinkWire.NDJSONFrameEncoder`; the core only moves the bytes.
public protocol RecordFrameEncoder: Sendable {
    /// Appends the frame for `record` to `frame`.
    func encodeFrame(_ record: Record, into frame: inout [UInt8])

    /// The frame for `record`, as a new array.
    func frame(for record: Record) -> [UInt8]

    /// Appends the frame for line `index` of `batch` to `frame`.
    func encodeLogFrame(_ batch: LogLineBatch, line index: Int, into frame: inout [UInt8])

    /// The frames of every line of `batch`, back to back in `frames`; the frame of line `i` ends at `ends[i]`
    /// (the form `RecordRing.appendWaitingForSpace(frames:ends:source:)` takes).
    func encodeLogFrames(_ batch: LogLineBatch) -> (frames: [UInt8], ends: [Int])
}

extension RecordFrameEncoder {
    /// Through `encodeFrame(_:into:)`.
    public func frame(for record: Record) -> [UInt8] {
        var frame: [UInt8] = []
        frame.reserveCapacity(record.estimatedFrameBytes)
        encodeFrame(record, into: &frame)
        return frame
    }

    /// Through a `Record`; encoders with a byte-level path override this.
    public func encodeLogFrame(_ batch: LogLineBatch, line index: Int, into frame: inout [UInt8]) {
        encodeFrame(batch.record(at: index), into: &frame)
    }

    /// One line at a time through `encodeLogFrame(_:line:into:)`.
    public func encodeLogFrames(_ batch: LogLineBatch) -> (frames: [UInt8], ends: [Int]) {
        var frames: [UInt8] = []
        frames.reserveCapacity(batch.messageBytes.count + batch.count * (72 + batch.source.utf8.count))
        var ends: [Int] = []
        ends.reserveCapacity(batch.count)
        for index in 0..<batch.count {
            encodeLogFrame(batch, line: index, into: &frames)
            ends.append(frames.count)
        }
        return (frames, ends)
    }
}
