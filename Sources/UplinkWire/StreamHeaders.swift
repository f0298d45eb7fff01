/// The checks of a stream request's headers (docs/protocol.md, "Request"): pure functions the collector calls and
/// the fuzz targets exercise.
public enum StreamHeaders {
    /// The longest agent id, in bytes.
    public static let maximumAgentIDLength = 128

    /// Whether `byte` may appear in an agent id: `[A-Za-z0-9._:-]`.
    @inline(__always)
    public static func isAgentIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    /// The `Uplink-Agent` value as an id when it is one: 1-128 bytes of `[A-Za-z0-9._:-]`.
    public static func agentID<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String? {
        guard (1...maximumAgentIDLength).contains(bytes.count), bytes.allSatisfy(isAgentIDByte) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The `Uplink-Epoch` value when it is a canonical decimal in `WireIntegers.epoch` (1 to 2^63 − 1).
    public static func epoch<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt64? {
        WireIntegers.decimal(bytes, in: WireIntegers.epoch)
    }

    /// The `Uplink-Window` value when it is a canonical decimal in `WireIntegers.window` (1 to 2^63 − 1).
    public static func window<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt64? {
        WireIntegers.decimal(bytes, in: WireIntegers.window)
    }

    /// Whether an `Uplink-Protocol` value names the version this implementation speaks (`1`, spaces and tabs
    /// around it allowed).
    public static func isSupportedProtocol<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        let value = Array(bytes)
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = value.firstIndex(where: { !isSpace($0) }), let last = value.lastIndex(where: { !isSpace($0) })
        else { return false }
        return first == last && value[first] == UInt8(ascii: "1")
    }

    /// Whether an `Authorization` value is `Bearer <token>`, compared in time independent of where the first
    /// difference is (it depends only on the lengths).
    public static func isBearer<Given: Collection<UInt8>, Token: Collection<UInt8>>(_ authorization: Given, token: Token) -> Bool {
        let expected = Array("Bearer ".utf8) + Array(token)
        guard authorization.count == expected.count else { return false }
        var difference: UInt8 = 0
        for (given, wanted) in zip(authorization, expected) { difference |= given ^ wanted }
        return difference == 0
    }
}
