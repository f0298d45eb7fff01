import CSodium
import UplinkCore

/// libsodium must be initialised once before use (it picks its implementations and seeds its random generator);
/// `sodium_init` is safe to call from several threads and again after success.
enum Sodium {
    private static let ready: Bool = sodium_init() >= 0

    /// Initialises libsodium; a failure (no entropy source) stops the process, as no key could be made safely.
    static func prepare() {
        precondition(ready, "libsodium could not be initialised (sodium_init failed)")
    }
}

/// Lower-case hexadecimal, as digests appear in envelopes, manifests and file names.
enum Hex {
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        for byte in bytes {
            output.append(digits[Int(byte >> 4)])
            output.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of `text`, which must be an even number of lower-case hexadecimal digits; nil otherwise.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0, ASCIIHexadecimal.isLowercase(utf8) else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = ASCIIHexadecimal.digit(utf8[index]), let low = ASCIIHexadecimal.digit(utf8[index + 1]) else {
                return nil
            }
            output.append(high << 4 | low)
            index += 2
        }
        return output
    }
}
