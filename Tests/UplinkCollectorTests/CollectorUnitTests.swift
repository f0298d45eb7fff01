import Foundation
import NIOCore
import Testing
import UplinkCore
import UplinkTestSupport
import UplinkWire

@testable import UplinkCollector

@Suite struct CollectorUnitTests {
    @Test(arguments: [
        (Int64(0), "1970-01-01T00:00:00.000000000Z"), (-1, "1969-12-31T23:59:59.999999999Z"),
        (1_763_704_818_123_456_789, "2025-11-21T06:00:18.123456789Z"), (951_782_400_000_000_000, "2000-02-29T00:00:00.000000000Z"),
        (4_107_542_400_000_000_000, "2100-03-01T00:00:00.000000000Z"), (Int64.min, "1677-09-21T00:12:43.145224192Z"),
        (Int64.max, "2262-04-11T23:47:16.854775807Z"),
    ] as [(Int64, String)])
    func utcTimestamps(nanoseconds: Int64, expected: String) {
        #expect(UTCTimestamp.string(nanoseconds: nanoseconds) == expected)
    }

    @Test(.computeBound) func utcTimestampsAgreeWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        var state: UInt64 = 0x7157
        for _ in 0..<5000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let nanoseconds = Int64(bitPattern: state)
            let seconds = Int64((Double(nanoseconds) / 1e9).rounded(.down))
            // Foundation's Date is a Double: compare whole seconds away from rounding trouble.
            guard nanoseconds - seconds * 1_000_000_000 > 1000, nanoseconds - seconds * 1_000_000_000 < 999_999_000 else { continue }
            let ours = UTCTimestamp.string(nanoseconds: nanoseconds)
            let foundation = formatter.string(from: Date(timeIntervalSince1970: Double(seconds)))
            #expect(ours.prefix(19) + "Z" == foundation, "\(nanoseconds)")
            #expect(ours.dropFirst(20).prefix(9) == String(nanoseconds - seconds * 1_000_000_000).leftPadded(to: 9))
        }
    }

    @Test func stdoutEscapesEverythingThatCouldBreakALine() {
        var text: [UInt8] = []
        StdoutForwardingSink.appendEscaped("a\nb\rc\td\\e\u{0}\u{1b}\u{7f}\u{85}\u{2028}\u{2029}é😀 ", to: &text)
        #expect(String(decoding: text, as: UTF8.self) == #"a\nb\rc\td\\e\u{0}\u{1b}\u{7f}\u{85}\u{2028}\u{2029}é😀 "#)
        var value: [UInt8] = []
        for number in [0.0, -0.0, 12.5, 1e-7, 3, -.infinity, .infinity, .nan, 1e300] {
            StdoutForwardingSink.appendValue(number, to: &value)
            value.append(UInt8(ascii: " "))
        }
        #expect(String(decoding: value, as: UTF8.self) == "0 0 12.5 1e-07 3 -Inf +Inf NaN 1e+300 ")
    }

    @Test(.computeBound) func theProcessorSortsChunksSplitAnywhereTheSameWay() {
        let stream = StreamKey(agent: "p", epoch: 1)
        let tooLong = Array(repeating: UInt8(ascii: "x"), count: 300)
        let lines = [recordLine(3), recordLine(4), Array("junk".utf8), recordLine(4), recordLine(8), Array(#"{"heartbeat":1}"#.utf8),
                     recordLine(2), tooLong, recordLine(9) + [UInt8(ascii: "\r")], recordLine(10)]
        let bytes = lines.flatMap { $0 + [UInt8(ascii: "\n")] }
        for split in 0...bytes.count {
            var processor = StreamProcessor(stream: stream, mark: 2, maxLineBytes: 200)
            let first = processor.process(ByteBufferAllocator().buffer(bytes: bytes[..<split]))
            let second = processor.process(ByteBufferAllocator().buffer(bytes: bytes[split...]))
            let accepted = first.lines.lineArrays + second.lines.lineArrays
            #expect(accepted == [recordLine(3), recordLine(4), recordLine(8), recordLine(9), recordLine(10)], "split at \(split)")
            #expect(first.lines.count + second.lines.count == 5)
            // Terminators included; record 9's "\r" unless the split made the splitter join (and trim) that line.
            let terminated = [3, 4, 8, 9, 10].map { recordLine($0).count + 1 }.reduce(0, +)
            #expect((terminated...terminated + 1).contains(first.lines.byteCount + second.lines.byteCount))
            #expect(first.duplicates + second.duplicates == 2)
            #expect(first.heartbeats + second.heartbeats == 1)
            #expect(first.malformed + second.malformed == 1)
            #expect(first.tooLong + second.tooLong == 1)
            #expect(first.gaps + second.gaps == [SequenceGap(after: 4, next: 8)])
            #expect(first.missing + second.missing == 3)
            #expect(second.highestSequence == 10)
            #expect(processor.mark == 10)
            #expect(processor.finish() == nil)
            // The newest record time is the `ts` of the batch's last stored line, also across a merge.
            func timestamp(_ line: [UInt8]?) -> Int64? {
                guard let line, case .record(_, let record)? = line.withUnsafeBytes({ try? WireLineParser.decode($0) })
                else { return nil }
                return record.timestamp
            }
            #expect(first.newestRecordTime == timestamp(first.lines.lineArrays.last), "split at \(split)")
            #expect(second.newestRecordTime == timestamp(second.lines.lineArrays.last), "split at \(split)")
            var merged = first
            merged.merge(second)
            #expect(merged.newestRecordTime == 1_763_704_818_000_000_010, "split at \(split)")
        }
    }

    @Test func originOffsetsAreCheckedPerLineWhereverChunksAreCut() {
        func line(_ sequence: UInt64, origin: UInt64, offset: UInt64) -> [UInt8] {
            recordLine(sequence, Record(
                timestamp: 1, source: "t",
                payload: .log(LogLine(message: "m\(sequence)", origin: RecordOrigin(id: origin, offset: offset)))))
        }
        // Origin 7 was stored up to 100 before; 8 is new. Lines 3 and 6 repeat offsets already taken.
        let lines = [
            line(1, origin: 7, offset: 90), line(2, origin: 7, offset: 110), line(3, origin: 7, offset: 110),
            line(4, origin: 8, offset: 5), line(5, origin: 7, offset: 120), line(6, origin: 8, offset: 5),
            line(7, origin: 8, offset: 9),
        ]
        let bytes = lines.flatMap { $0 + [UInt8(ascii: "\n")] }
        for split in 0...bytes.count {
            var processor = StreamProcessor(
                stream: StreamKey(agent: "p", epoch: 1), mark: 0, originMarks: [7: 100], maxLineBytes: 1 << 20)
            var batch = processor.process(ByteBufferAllocator().buffer(bytes: bytes[..<split]))
            batch.merge(processor.process(ByteBufferAllocator().buffer(bytes: bytes[split...])))
            #expect(batch.lines.lineArrays == [lines[1], lines[3], lines[4], lines[6]], "split at \(split)")
            #expect(batch.resent == 3)
            #expect(batch.origins == [7: 120, 8: 9])
            #expect(processor.originMarks == [7: 120, 8: 9])
            #expect(batch.highestSequence == 7)
        }
    }

    @Test func consecutiveAcceptedLinesOfAChunkStayOneSlice() {
        var processor = StreamProcessor(stream: StreamKey(agent: "p", epoch: 1), mark: 0, maxLineBytes: 1 << 20)
        let bytes = (1...1_000).flatMap { recordLine(UInt64($0)) + [UInt8(ascii: "\n")] }
        // The chunk ends in the middle of record 1,000: 999 lines in one slice, the last one joined later.
        let batch = processor.process(ByteBufferAllocator().buffer(bytes: bytes.dropLast(5)))
        #expect(batch.lines.count == 999)
        #expect(batch.lines.runs.count == 1)
        // A duplicate in the middle splits the slice in two.
        let rest = Array(bytes.suffix(5)) + recordLine(500) + [UInt8(ascii: "\n")] + recordLine(1_001) + [UInt8(ascii: "\n")]
        let next = processor.process(ByteBufferAllocator().buffer(bytes: rest))
        #expect(next.lines.lineArrays == [recordLine(1_000), recordLine(1_001)])
        #expect(next.lines.runs.count == 2)
        #expect(next.duplicates == 1)
    }

    /// With `\n` and `\r\n` terminators mixed, and runs of accepted lines broken by a duplicate and a malformed
    /// line, wherever the chunks split, every accepted line comes out whole and without its terminator.
    @Test func acceptedLinesComeOutWholeWithMixedTerminatorsAndBrokenRuns() {
        let lines: [(bytes: [UInt8], terminator: [UInt8])] = [
            (recordLine(1), [0x0A]), (recordLine(2), [0x0D, 0x0A]), (recordLine(1), [0x0A]),
            (Array("not json".utf8), [0x0D, 0x0A]), (recordLine(3), [0x0D, 0x0A]), (recordLine(4), [0x0A]),
            (recordLine(5), [0x0D, 0x0A]),
        ]
        let bytes = lines.flatMap { $0.bytes + $0.terminator }
        for split in 0...bytes.count {
            var processor = StreamProcessor(stream: StreamKey(agent: "p", epoch: 1), mark: 0, maxLineBytes: 1 << 20)
            var batch = processor.process(ByteBufferAllocator().buffer(bytes: bytes[..<split]))
            batch.merge(processor.process(ByteBufferAllocator().buffer(bytes: bytes[split...])))
            #expect(batch.lines.lineArrays == [1, 2, 3, 4, 5].map { recordLine(UInt64($0)) }, "split at \(split)")
            #expect(batch.lines.count == 5)
        }
    }

    @Test func storedRecordsAreSplicedAndParsedBack() throws {
        let batch = CollectorBatch(
            stream: StreamKey(agent: "edge-1", epoch: 99),
            lines: RecordLines([
                ByteBufferAllocator().buffer(bytes: recordLine(5)),
                ByteBufferAllocator().buffer(string: #"  {"seq":6,"ts":1,"src":"s","log":""}"#),
            ]),
            highestSequence: 6)
        var bytes: [UInt8] = []
        StoredLine.append(batch, to: &bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        let lines = text.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[1] == #"{"agent":"edge-1","epoch":99,"seq":6,"ts":1,"src":"s","log":""}"#)
        for (line, sequence) in zip(lines, [UInt64(5), 6]) {
            let parsed = StoredLine.key(of: ByteBufferAllocator().buffer(string: String(line)))
            #expect(parsed?.stream == StreamKey(agent: "edge-1", epoch: 99))
            #expect(parsed?.sequence == sequence)
            #expect(try JSONSerialization.jsonObject(with: Data(line.utf8)) is [String: Any])
        }
        for bad in [
            #"{"seq":1,"ts":1,"src":"s","log":""}"#, #"{"agent":"a b","epoch":1,"seq":1,"ts":1,"src":"s","log":""}"#,
            #"{"agent":"a","epoch":x,"seq":1,"ts":1,"src":"s","log":""}"#, #"{"agent":"a","epoch":1,"ts":1,"src":"s","log":""}"#,
            #"{"agent":"a","epoch":1,"seq":1"#, "",
        ] {
            #expect(StoredLine.key(of: ByteBufferAllocator().buffer(string: bad)) == nil, "\(bad)")
        }
    }

    @Test func ledgerLines() {
        func parse(_ text: String) -> (StreamKey, UInt64, Int64)? {
            MarksLedger.parseLine(ByteBufferAllocator().buffer(string: text))
        }
        let parsed = parse("edge-1 9223372036854775807 7 1234")
        #expect(parsed?.0 == StreamKey(agent: "edge-1", epoch: UInt64(Int64.max)))
        let origin = parse("edge-1/origin 9223372036854775807 0 1")
        #expect(origin?.0 == StreamKey.origin(agent: "edge-1", id: UInt64(Int64.max)))
        #expect(origin?.1 == 0)
        #expect(parsed?.1 == 7)
        #expect(parsed?.2 == 1234)
        for bad in ["", "a 1 2", "a 1 2 3 4", "a  1 2 3", "a 1 2 -3", "a b 2 3", "a 1 2 9223372036854775808", "é 1 2 3", "a 1 2 3 ",
            // The wire's ranges (docs/protocol.md, "Integer ranges"): epoch and origin 1...2^63-1, marks 0...2^63-1.
            "a 0 2 3", "a 9223372036854775808 2 3", "a 18446744073709551615 2 3", "a 1 9223372036854775808 3",
            "a 01 2 3", "a +1 2 3", "a/origin 0 2 3", "a/origin 9223372036854775808 2 3", "a/origin 1 9223372036854775808 3",
            "a 1 " + String(repeating: "9", count: 5000) + " 3"] {
            #expect(parse(bad) == nil, "\(bad)")
        }
        var bytes: [UInt8] = []
        MarksLedger.appendLine(StreamKey(agent: "x", epoch: 3), 9, 100, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "x 3 9 100\n")
    }

    @Test func bearerTokensAreComparedExactly() {
        #expect(Collector.isBearer("Bearer abc", token: "abc"))
        for given in ["Bearer abd", "Bearer ab", "Bearer abcd", "bearer abc", "abc", "", "Bearer  abc"] {
            #expect(!Collector.isBearer(given, token: "abc"), "\(given)")
        }
    }

    @Test func acknowledgementsWaitingToBeWrittenMergeIntoTheNewest() {
        let pending = PendingAck()
        #expect(pending.take() == nil)
        #expect(pending.offer(3, bytes: 100), "the first wakes the response side")
        #expect(!pending.offer(7, bytes: 100), "later ones merge while one waits")
        #expect(!pending.offer(9, bytes: 100))
        #expect(pending.take() == 9)
        #expect(pending.take() == nil)
        #expect(pending.offer(10, bytes: 100))
        #expect(pending.take() == 10)
    }

    @Test func acknowledgementsArePacedUnlessUrgent() {
        let pending = PendingAck()
        let start = ContinuousClock.now
        #expect(pending.offer(1, bytes: 200))
        #expect(pending.delay(now: start) == nil, "the first ack of a stream is not held back")
        #expect(pending.take(now: start) == 1)
        #expect(pending.delay(now: start) == nil, "nothing waits, nothing to hold back")

        #expect(pending.offer(2, bytes: 200))
        let soon = start + .milliseconds(1)
        #expect(pending.delay(now: soon) == PendingAck.interval - .milliseconds(1), "the next waits out the interval")
        #expect(pending.delay(now: start + PendingAck.interval) == nil)

        // Lines stored meanwhile wake the response side once more when they make the waiting ack urgent.
        #expect(!pending.offer(3, bytes: PendingAck.defaultUrgentBytes - 201))
        #expect(pending.delay(now: soon) != nil, "one byte below the urgent size")
        #expect(pending.offer(4, bytes: 1), "crossing the urgent size wakes the response side")
        #expect(!pending.offer(5, bytes: 1), "once")
        #expect(pending.delay(now: soon) == nil, "an urgent ack is written at once")
        #expect(pending.take(now: soon) == 5)
    }

    @Test func anAgentsWindowMakesItsAcksUrgentAtAQuarterOfIt() {
        #expect(PendingAck.urgentBytes(window: nil) == PendingAck.defaultUrgentBytes, "no window: the default")
        #expect(PendingAck.urgentBytes(window: 16 << 20) == PendingAck.defaultUrgentBytes, "a large ring: the default")
        #expect(PendingAck.urgentBytes(window: 4096) == 1024, "a 4 KiB ring: a quarter of it")
        #expect(PendingAck.urgentBytes(window: 3) == 1, "never zero")
        #expect(PendingAck.urgentBytes(window: UInt64(Int64.max)) == PendingAck.defaultUrgentBytes)

        let pending = PendingAck(urgentBytes: PendingAck.urgentBytes(window: 4096))
        let start = ContinuousClock.now
        #expect(pending.offer(1, bytes: 200))
        #expect(pending.take(now: start) == 1)
        #expect(pending.offer(2, bytes: 800))
        #expect(pending.delay(now: start) != nil, "below a quarter of the window: paced")
        #expect(pending.offer(3, bytes: 224), "a quarter of the window stored: wakes the response side")
        #expect(pending.delay(now: start) == nil, "and is written at once")
    }

    @Test func theWindowHeaderIsACanonicalDecimal() {
        #expect(StreamHeaders.window("4096".utf8) == 4096)
        #expect(StreamHeaders.window("9223372036854775807".utf8) == UInt64(Int64.max))
        for bad in ["", "0", "04096", "-1", "+5", " 5", "5 ", "4k", "9223372036854775808", "99999999999999999999999"] {
            #expect(StreamHeaders.window(bad.utf8) == nil, "\(bad)")
        }
    }
}

extension String {
    func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}

@Suite struct MarkTableOriginTests {
    @Test(.computeBound) func originMarksArePerAgentAndTheLongestUnraisedAreForgottenFirst() {
        let table = MarkTable([StreamKey(agent: "a", epoch: 1): 5, StreamKey.origin(agent: "a", id: 900_000): 77])
        #expect(table.originMarks(agent: "a") == [900_000: 77])
        #expect(table.streamMarks() == [StreamKey(agent: "a", epoch: 1): 5])
        let limit = MarkTable.maximumOriginsPerAgent
        // Many incarnations come and go; origin 1 (a file still being written) keeps being raised.
        for id in UInt64(2)...UInt64(limit + 600) {
            table.raise([Self.batch("a", origins: [id: 10, 1: id])])
        }
        table.raise([Self.batch("b", origins: [2: 3])])
        let origins = table.originMarks(agent: "a")
        #expect(origins.count <= limit + 512)
        #expect(origins.count >= limit)
        #expect(origins[1] == UInt64(limit + 600))
        #expect(origins[UInt64(limit + 600)] == 10)
        #expect(origins[2] == nil, "the oldest finished incarnation is forgotten")
        #expect(origins[900_000] == nil, "an origin loaded at start and never raised again goes first")
        #expect(table.originMarks(agent: "b") == [2: 3])
        // A lower offset never lowers a mark.
        table.raise([Self.batch("b", origins: [2: 1])])
        #expect(table.originMarks(agent: "b") == [2: 3])
        let snapshot = table.snapshot()
        #expect(snapshot[StreamKey.origin(agent: "b", id: 2)] == 3)
        #expect(snapshot[StreamKey(agent: "a", epoch: 1)] == 5)
        #expect(snapshot.count == 1 + origins.count + 1)
    }

    @Test func streamMarksRiseWithTheirBatchesAndNeverFall() {
        let table = MarkTable([StreamKey(agent: "a", epoch: 1): 5])
        table.raise([Self.batch("a", epoch: 1, through: 9), Self.batch("b", epoch: 4, through: 2)])
        table.raise([Self.batch("a", epoch: 1, through: 7)])
        #expect(table.streamMarks() == [StreamKey(agent: "a", epoch: 1): 9, StreamKey(agent: "b", epoch: 4): 2])
        #expect(table.originMarks(agent: "a").isEmpty)
    }

    @Test func unledgeredMarksKeepTheHighestOfEachStreamAndOriginAndListThemInLedgerOrder() {
        var marks = UnledgeredMarks()
        #expect(marks.isEmpty)
        marks.raise(Self.batch("b", epoch: 2, through: 8, origins: [7: 100, 3: 50]))
        marks.raise(Self.batch("b", epoch: 2, through: 6, origins: [7: 90, 3: 60]))
        marks.raise(Self.batch("a", epoch: 1, through: 1))
        #expect(marks.count == 4)
        let entries = marks.sortedEntries().map { "\($0.0.agent) \($0.0.epoch) \($0.1)" }
        #expect(entries == ["a 1 1", "b 2 8", "b/origin 3 60", "b/origin 7 100"])
        marks.removeAll(keepingCapacity: true)
        #expect(marks.isEmpty && marks.sortedEntries().isEmpty)
    }

    /// A batch of `agent`'s stream `epoch` with no lines, raising its mark to `through` and the given origins.
    static func batch(_ agent: String, epoch: UInt64 = 1, through: UInt64 = 0, origins: [UInt64: UInt64] = [:]) -> CollectorBatch {
        CollectorBatch(stream: StreamKey(agent: agent, epoch: epoch), lines: RecordLines(), highestSequence: through, origins: origins)
    }
}
