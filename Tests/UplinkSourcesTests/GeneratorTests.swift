import Logging
import Testing
import UplinkTestSupport
import UplinkCore

@testable import UplinkSources

@Suite("generator")
struct GeneratorTests {
    @Test("message format, size and fields")
    func format() async throws {
        let sink = RecordingSink()
        try await run(GeneratorSource(name: "g1", config: GeneratorConfig(rate: 0, count: 3)), sink: sink)
        let records = sink.records
        #expect(records.count == 3)
        for (index, record) in records.enumerated() {
            let line = try #require(record.logLine)
            let prefix = "gen g1 " + String(repeating: "0", count: 11) + "\(index) "
            #expect(line.message.hasPrefix(prefix))
            #expect(line.message.utf8.count == 200)
            #expect(line.message.dropFirst(prefix.count).allSatisfy { $0 == "x" })
            #expect(line.fields == [Tag("n", "\(index)")])
            #expect(record.source == "g1")
            #expect(record.timestamp > 1_700_000_000_000_000_000)
        }
    }

    @Test("rate 0 hands records over in batches that double up to 256 (and 256 KiB), without origin or batch fields")
    func unpacedBatches() async throws {
        let sink = RecordingSink()
        try await run(GeneratorSource(name: "b", config: GeneratorConfig(rate: 0, recordBytes: 30, count: 700)), sink: sink)
        let records = sink.records
        #expect(sink.batches.map(\.count) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 189])
        #expect(sink.batches.allSatisfy { $0.fields.isEmpty && $0.originID == 0 && $0.source == "b" })
        #expect(sink.emitCalls == 0, "every record came in a batch")

        let large = RecordingSink()
        try await run(
            GeneratorSource(name: "b", config: GeneratorConfig(rate: 0, recordBytes: 100_000, count: 8)), sink: large)
        #expect(large.batches.map(\.count) == [1, 2, 2, 2, 1], "at most 256 KiB of messages per batch")
        var messages = GeneratorSource.MessageBuilder(sourceName: "b", recordBytes: 30)
        for (index, record) in records.enumerated() {
            #expect(record == .log(
                messages.message(for: UInt64(index)), fields: [Tag("n", "\(index)")], source: "b",
                timestamp: record.timestamp))
            #expect(record.timestamp > 1_700_000_000_000_000_000)
        }
    }

    @Test("messages as bytes are the messages as strings, also beyond 12 digits")
    func messageBytes() {
        var messages = GeneratorSource.MessageBuilder(sourceName: "m", recordBytes: 25)
        for counter: UInt64 in [0, 7, 999_999_999_999, 1_000_000_000_000, .max] {
            let bytes = messages.withMessageBytes(for: counter) { Array($0) }
            #expect(String(decoding: bytes, as: UTF8.self) == messages.message(for: counter))
        }
    }

    @Test("record_bytes smaller than the prefix gives just the prefix; sizes count UTF-8 bytes")
    func sizes() {
        var small = GeneratorSource.MessageBuilder(sourceName: "gen-a", recordBytes: 10)
        #expect(small.message(for: 42) == "gen gen-a 000000000042 ")
        var exact = GeneratorSource.MessageBuilder(sourceName: "b", recordBytes: 19)
        #expect(exact.message(for: 7) == "gen b 000000000007 ")
        #expect(exact.prefixBytes == 19)
        var unicode = GeneratorSource.MessageBuilder(sourceName: "größe", recordBytes: 64)
        let message = unicode.message(for: 123_456_789_012)
        #expect(message.hasPrefix("gen größe 123456789012 x"))
        #expect(message.utf8.count == 64)
        var large = GeneratorSource.MessageBuilder(sourceName: "c", recordBytes: 30)
        let beyond = large.message(for: 12_345_678_901_234)
        #expect(beyond == "gen c 12345678901234 xxxxxxxxx")
        #expect(large.message(for: 5).utf8.count == 30)
    }

    @Test("count 0 produces nothing; finite rate uses emit")
    func countAndEmitMethod() async throws {
        let none = RecordingSink()
        try await run(GeneratorSource(name: "g", config: GeneratorConfig(count: 0)), sink: none)
        #expect(none.count == 0)

        let paced = RecordingSink()
        try await run(GeneratorSource(name: "g", config: GeneratorConfig(rate: 100_000, recordBytes: 50, count: 250)), sink: paced)
        #expect(paced.count == 250)
        #expect(paced.emitCalls == 250)
        #expect(paced.waitingCalls == 0)
        #expect(paced.records.map { $0.logLine!.fields[0].value } == (0..<250).map(String.init))
    }

    @Test("a paced run with a count takes at least count/rate and returns")
    func pacedCount() async throws {
        let sink = RecordingSink()
        let clock = ContinuousClock()
        let started = clock.now
        try await run(GeneratorSource(name: "g", config: GeneratorConfig(rate: 1000, count: 300)), sink: sink)
        let elapsed = started.duration(to: clock.now)
        #expect(sink.count == 300)
        // Record 299 is due 0.299 s after the start: it cannot come sooner.
        #expect(elapsed >= .milliseconds(299))
    }

    @Test("the paced rate is roughly right over a bounded run")
    func pacedRate() async throws {
        let sink = RecordingSink()
        let clock = ContinuousClock()
        let started = clock.now
        let task = Task {
            try await run(GeneratorSource(name: "g", config: GeneratorConfig(rate: 2000)), sink: sink)
        }
        // Wait for a few hundred records, bounded; a busy machine may take longer, which proves nothing.
        await eventually(timeout: .seconds(30)) { sink.count >= 400 }
        task.cancel()
        try await task.value
        let elapsed = GeneratorSource.Pacer.seconds(started.duration(to: clock.now))
        let count = Double(sink.count)
        #expect(count >= 400)
        // Never ahead of the schedule: at most rate × elapsed (+1 for record 0 at time 0), however fast the machine.
        #expect(count <= 2000 * elapsed + 1)
        #expect(sink.waitingCalls == 0)
    }

    @Test("rate 0 waits for space instead of dropping")
    func unpacedWaitsForSpace() async throws {
        let sink = RecordingSink(permits: 5)
        let finished = Flag()
        let task = Task {
            try await run(GeneratorSource(name: "g", config: GeneratorConfig(rate: 0, recordBytes: 40, count: 12)), sink: sink)
            finished.set()
        }
        // Wait (bounded) until the generator is blocked on the sixth record.
        await eventually { sink.waiting > 0 }
        #expect(sink.count == 5)
        #expect(sink.waiting == 1)
        #expect(!finished.isSet)

        sink.grant(4)
        await eventually { sink.count >= 9 && sink.waiting > 0 }
        #expect(sink.count == 9)
        #expect(!finished.isSet)

        sink.grant(100)
        try await task.value
        #expect(finished.isSet)
        #expect(sink.count == 12)
        #expect(sink.emitCalls == 0)
        #expect(sink.records.map { $0.logLine!.fields[0].value } == (0..<12).map(String.init))
    }

    @Test("rate 0 without a count runs until cancelled")
    func unpacedCancellation() async throws {
        let sink = RecordingSink()
        let task = Task {
            try await run(GeneratorSource(name: "g", config: GeneratorConfig(rate: 0, recordBytes: 16)), sink: sink)
        }
        await eventually { sink.count >= 5000 }
        task.cancel()
        try await task.value
        #expect(sink.count >= 5000)
        #expect(sink.emitCalls == 0)
    }

    @Test("an oversize rejection stops the generator with one error")
    func oversize() async throws {
        for rate in [0.0, 1000] {
            let sink = RecordingSink(rejecting: true)
            let logs = LogCapture()
            try await run(GeneratorSource(name: "g", config: GeneratorConfig(rate: rate)), sink: sink, logger: logs.logger)
            let calls = sink.emitCalls + sink.waitingCalls
            #expect(calls == 1)
            #expect(logs.all.map(\.level) == [.error])
        }
    }

    @Test("pacer arithmetic")
    func pacer() {
        let start = ContinuousClock.now
        let pacer = GeneratorSource.Pacer(rate: 1000, start: start)
        #expect(pacer.due(at: start) == 1)
        #expect(pacer.due(at: start.advanced(by: .microseconds(999))) == 1)
        #expect(pacer.due(at: start.advanced(by: .milliseconds(1))) == 2)
        #expect(pacer.due(at: start.advanced(by: .seconds(2))) == 2001)
        #expect(pacer.due(at: start.advanced(by: .seconds(-1))) == 0)
        // At low rates the next wake-up is when the next record is due, not every millisecond.
        let slow = GeneratorSource.Pacer(rate: 2, start: start)
        #expect(slow.wakeUp(afterEmitting: 1, now: start) == start.advanced(by: .milliseconds(500)))
        // At high rates, not sooner than 1 ms.
        let fast = GeneratorSource.Pacer(rate: 1_000_000, start: start)
        #expect(fast.wakeUp(afterEmitting: 1, now: start) == start.advanced(by: .milliseconds(1)))
    }
}
