import UplinkCore

/// Who may read the fleet page and `/v1/fleet` when the collector has a token: `Authorization: Bearer <token>` (as
/// agents send it), or HTTP Basic with the token as the password and any user name, so that a browser can log in
/// with its own dialog.
///
/// The token is compared in time that depends only on the lengths, never on where the first difference is.
enum FleetAuthorization {
    /// The challenge of a `401`: browsers answer it with their login dialog.
    static let challenge = #"Basic realm="uplink collector""#

    /// Whether `authorization` (the header's value, nil when absent) carries `token`.
    static func allows(_ authorization: String?, token: String) -> Bool {
        guard let authorization else { return false }
        if Collector.isBearer(authorization, token: token) { return true }
        let value = Array(authorization.utf8)
        let scheme = Array("basic ".utf8)
        // The scheme is case-insensitive (RFC 9110 §11.1).
        let lowercased = { (byte: UInt8) in (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte }
        guard value.count > scheme.count,
            zip(value.prefix(scheme.count), scheme).allSatisfy({ lowercased($0) == $1 })
        else { return false }
        let encoded = value.dropFirst(scheme.count).drop { $0 == UInt8(ascii: " ") }
        guard let credentials = Base64.decode(encoded),
            let colon = credentials.firstIndex(of: UInt8(ascii: ":"))
        else { return false }
        return constantTimeEqual(credentials[(colon + 1)...], Array(token.utf8))
    }

    /// Compares in time that depends only on the lengths.
    static func constantTimeEqual<Given: Collection<UInt8>>(_ given: Given, _ expected: [UInt8]) -> Bool {
        guard given.count == expected.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(given, expected) { difference |= a ^ b }
        return difference == 0
    }
}
