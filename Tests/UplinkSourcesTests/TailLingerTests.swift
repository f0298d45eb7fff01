import Logging
import Synchronization
import Testing
import UplinkCore
import UplinkTestSupport

@testable import UplinkSources

/// `uplink.linger` in the tailer: after an idle wait it waits out the budget before reading, so what was written
/// meanwhile is read in one pass; without a budget it never waits. The tailer runs on a clock the test advances, so
/// the budget ends when the test says and nothing here depends on how long anything takes.
@Suite("tail linger")
struct TailLingerTests {
    /// Runs a tail source with `linger` on a clock the test advances.
    static func start(
        _ config: TailConfig, linger: Duration, clock: ManualTickClock, sink: some RecordSink
    ) -> Task<Void, any Error> {
        let source = TailSource(name: "linger-test", config: config, clock: clock)
        let context = SourceContext(sink: sink, logger: Logger(label: "linger-test"), linger: linger)
        return Task { try await source.run(context: context) }
    }

    @Test func linesWrittenWithinTheBudgetAreReadTogetherWhenItEnds() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        writeFile(path, "")
        let clock = ManualTickClock()
        // Lines wait for an acknowledgement that never comes, so an idle reader looks every checkpoint interval (50 ms).
        let sink = RecordingSink(acknowledgesOnEmit: false)
        var config = tailTestConfig([path], watch: .auto, startAt: .beginning)
        config.discoveryInterval = .seconds(60)
        let tail = Self.start(config, linger: .seconds(1), clock: clock, sink: sink)
        let writer = TailTestWriter(path)

        // The first line wakes the idle reader, which waits out the budget before it reads again. (Had the reader not
        // gone idle yet when the line was written, it read it in its first pass and waits to look for the line's
        // acknowledgement: moving the clock on in small steps ends that wait, and it lingers after it.) No other timer
        // of the reader is due in 0.9-1 s.
        writer.write("line 0\n")
        let lingering = await eventually {
            if clock.sleepsLeft.contains(where: { $0 > .milliseconds(900) && $0 <= .seconds(1) }) { return true }
            clock.advance(by: .milliseconds(10))
            return false
        }
        #expect(lingering)
        let readBeforeLingering = sink.count
        #expect(readBeforeLingering <= 1)
        for index in 1..<50 { writer.write("line \(index)\n") }
        // The reader sleeps on the test's clock: nothing more can have been read, however slow or fast the machine is.
        #expect(sink.count == readBeforeLingering)
        clock.advance(by: .seconds(1))
        #expect(await eventually { sink.count == 50 })
        #expect(sink.records.map(\.tailMessage) == (0..<50).map { "line \($0)" })

        tail.cancel()
        try await tail.value
    }

    @Test func withoutABudgetTheReaderNeverWaits() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        writeFile(path, "")
        let clock = ManualTickClock()
        let sink = RecordingSink()
        let tail = Self.start(
            tailTestConfig([path], watch: .auto, startAt: .beginning), linger: .zero, clock: clock, sink: sink)
        let writer = TailTestWriter(path)
        for index in 0..<20 {
            writer.write("line \(index)\n")
            #expect(await eventually { sink.count == index + 1 })
        }
        // Each line was read while the clock stood still: the reader never waited on it.
        tail.cancel()
        try await tail.value
    }
}
