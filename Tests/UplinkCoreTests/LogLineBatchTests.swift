import Testing
import UplinkCore

@Suite struct LogLineBatchTests {
    @Test func linesKeepTheirMessagesValuesAndOwnFields() {
        var batch = LogLineBatch(source: "app", fields: [Tag("path", "/l")], originID: 9)
        Array("first".utf8).withUnsafeBytes { batch.append(message: $0, timestamp: 1, originOffset: 6) }
        ([0x61, 0xFF] as [UInt8]).withUnsafeBytes {
            batch.append(
                message: $0, timestamp: 2, originOffset: 9, extraFields: [Tag("k", "v"), Tag("é", ""), Tag("", "😀")])
        }
        Array("third".utf8).withUnsafeBytes {
            batch.append(message: $0, timestamp: 3, originOffset: 15, extraField: "truncated", decimal: 0)
        }
        Array("".utf8).withUnsafeBytes {
            batch.append(message: $0, timestamp: 4, originOffset: 16, extraField: "n", decimal: .max)
        }
        #expect(batch.count == 4)
        #expect(batch.lines.map(\.hasExtraFields) == [false, true, true, true])
        #expect(batch.extraFields(ofLine: 0) == [])
        #expect(batch.extraFields(ofLine: 1) == [Tag("k", "v"), Tag("é", ""), Tag("", "😀")])
        #expect(batch.extraFields(ofLine: 2) == [Tag("truncated", "0")])
        #expect(batch.extraFields(ofLine: 3) == [Tag("n", "18446744073709551615")])

        #expect(batch.record(at: 0) == Record(
            timestamp: 1, source: "app",
            payload: .log(LogLine(message: "first", fields: [Tag("path", "/l")], origin: RecordOrigin(id: 9, offset: 6)))))
        #expect(batch.record(at: 1) == Record(
            timestamp: 2, source: "app",
            payload: .log(LogLine(
                message: "a\u{FFFD}", fields: [Tag("path", "/l"), Tag("k", "v"), Tag("é", ""), Tag("", "😀")],
                origin: RecordOrigin(id: 9, offset: 9)))))
        #expect(batch.record(at: 3).logFields == [Tag("path", "/l"), Tag("n", "18446744073709551615")])

        var keys: [[UInt8]] = []
        batch.forEachExtraField(ofLine: 1) { key, _ in keys.append(Array(key)) }
        #expect(keys == [Array("k".utf8), Array("é".utf8), []])
    }

    @Test func removeAllForgetsLinesAndFields() {
        var batch = LogLineBatch(source: "gen", fields: [], originID: 0)
        Array("x".utf8).withUnsafeBytes {
            batch.append(message: $0, timestamp: 1, originOffset: 0, extraField: "n", decimal: 7)
        }
        batch.removeAll()
        #expect(batch.isEmpty)
        #expect(batch.messageBytes.isEmpty && batch.extraFieldBytes.isEmpty)
        Array("y".utf8).withUnsafeBytes { batch.append(message: $0, timestamp: 2, originOffset: 0) }
        #expect(batch.record(at: 0) == .log("y", source: "gen", timestamp: 2))
        #expect(batch.origin(of: 0) == nil)
    }
}

extension Record {
    fileprivate var logFields: [UplinkCore.Tag]? {
        if case .log(let line) = payload { return line.fields }
        return nil
    }
}
