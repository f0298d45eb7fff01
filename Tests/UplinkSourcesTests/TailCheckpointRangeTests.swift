import Testing

@testable import UplinkSources

/// Every number of a checkpoint file is range-checked where it is read: origin ids and offsets go on the wire,
/// whose ranges are 1...2^63-1 and 0...2^63-1 (docs/protocol.md, "Integer ranges").
@Suite struct TailCheckpointRangeTests {
    static func decodes(_ entry: String, end: String = "end 1") -> Bool {
        let text = "uplink-tail-checkpoints 1\n\(entry)\n\(end)\n"
        if case .success = TailCheckpointFile.decode(Array(text.utf8)) { return true }
        return false
    }

    @Test func theLargestValuesAreAccepted() {
        #expect(Self.decodes("18446744073709551615 18446744073709551615 0 FFFFFFFFFFFFFFFF 9223372036854775807 9223372036854775807 /x"))
        #expect(Self.decodes("1 2 3 00000000deadbeef 1 0 /x"))
    }

    @Test(arguments: [
        "1 2 3 00000000deadbeef 9223372036854775808 0 /x",  // origin above 2^63-1
        "1 2 3 00000000deadbeef 0 0 /x",  // origin 0
        "1 2 3 00000000deadbeef 1 9223372036854775808 /x",  // offset above 2^63-1
        "1 2 3 00000000deadbeef 1 -0 /x", "1 2 3 00000000deadbeef +1 0 /x", "+1 2 3 00000000deadbeef 1 0 /x",
        "1 2 -3 00000000deadbeef 1 0 /x", "1 2 3 +0000000deadbeef 1 0 /x", "1 2 3 00000000deadbeef 1 1e3 /x",
        "18446744073709551616 2 3 00000000deadbeef 1 0 /x",
        "1 2 3 00000000deadbeef 1 \(String(repeating: "9", count: 5000)) /x",
    ])
    func outOfRangeOrSignedNumbersAreRefused(entry: String) {
        #expect(!Self.decodes(entry))
    }

    @Test func theEndLineIsAPlainNumber() {
        #expect(!Self.decodes("1 2 3 00000000deadbeef 1 0 /x", end: "end +1"))
        #expect(!Self.decodes("1 2 3 00000000deadbeef 1 0 /x", end: "end " + String(repeating: "9", count: 5000)))
    }
}
