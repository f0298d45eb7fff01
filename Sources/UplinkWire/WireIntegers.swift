import UplinkCore

/// The ranges of the protocol's integers (docs/protocol.md, "Integer ranges"), shared by the agent and the
/// collector so both sides accept exactly the same values.
///
/// Every integer is at most 2^63 − 1 (`Int64.max`), so it fits a signed 64-bit integer on every platform and
/// language the data may pass through, and the difference of two of them (a gap) fits a `UInt64`.
public enum WireIntegers {
    /// The largest value of any of the protocol's integers: 2^63 − 1.
    public static let maximum = UInt64(Int64.max)

    /// `seq` of a record: the agent's ring numbers records from 1.
    public static let sequence: ClosedRange<UInt64> = 1...maximum
    /// `resume` and `ack`: a stored mark, 0 when nothing is stored.
    public static let mark: ClosedRange<UInt64> = 0...maximum
    /// The `Uplink-Epoch` header: agents pick a random epoch in this range when they start.
    public static let epoch: ClosedRange<UInt64> = 1...maximum
    /// `origin`: the id of a log file incarnation.
    public static let origin: ClosedRange<UInt64> = 1...maximum
    /// `offset`: a byte offset in a log file.
    public static let offset: ClosedRange<UInt64> = 0...maximum
    /// The `Uplink-Window` header: the bytes of records the agent can hold unacknowledged (its ring's capacity).
    public static let window: ClosedRange<UInt64> = 1...maximum

    /// Reads a canonical decimal: ASCII digits only, no sign, no spaces, no leading zero (except `0` itself).
    /// Returns nil for anything else and for values outside `range`, however many digits the text has.
    public static func decimal<Bytes: Collection<UInt8>>(_ bytes: Bytes, in range: ClosedRange<UInt64>) -> UInt64? {
        guard let first = bytes.first else { return nil }
        guard first != UInt8(ascii: "0") || bytes.count == 1, let value = ASCIIDecimal.value(bytes) else { return nil }
        return range.contains(value) ? value : nil
    }
}
