/// The characters of the names uplink checks before it uses them in file names, URLs, headers or metrics: source
/// and sink names, signing key ids, remote document names and agent label names are all made of ASCII letters,
/// digits, `.`, `_` and `-` (POSIX's portable file name characters). Each kind of name adds its own length limit and
/// rules.
public enum PortableName {
    /// Whether `name` is 1 to `maximumBytes` of the characters (`isPortable`).
    public static func isValid(_ name: some StringProtocol, maximumBytes: Int) -> Bool {
        !name.isEmpty && name.utf8.count <= maximumBytes && name.utf8.allSatisfy(isPortable)
    }

    /// Whether `byte` is one of `A-Z a-z 0-9 . _ -`.
    public static func isPortable(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default: false
        }
    }
}
