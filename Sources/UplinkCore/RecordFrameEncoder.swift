/// Turns a record into the bytes the circular buffer stores for it: its wire frame without the sequence number,
/// which the ring assigns on append and the uplink writes in front of the frame when it sends it.
///
/// Implemented by `UplinkWire.NDJSONFrameEncoder`; the core only moves the bytes.
public protocol RecordFrameEncoder: Sendable {
    /// Appends the frame for `record` to `frame`.
    func encodeFrame(_ record: Record, into frame: inout [UInt8])

    /// Appends the frame for line `index` of `batch` to `frame`.
    func encodeLogFrame(_ batch: LogLineBatch, line index: Int, into frame: inout [UInt8])
}

extension RecordFrameEncoder {
    /// Through a `Record`; encoders with a byte-level path override this.
    public func encodeLogFrame(_ batch: LogLineBatch, line index: Int, into frame: inout [UInt8]) {
        encodeFrame(batch.record(at: index), into: &frame)
    }
}
