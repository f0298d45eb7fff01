import Logging
import Synchronization
import Testing
import UplinkCore

@testable import UplinkSources

/// `uplink.linger` in the tailer: after an idle wait it waits out the budget before reading, so what was written
/// meanwhile is read in one pass; without a budget it never waits. The budget's end is decided by the test (a gate in
/// place of the sleep), so nothing here depends on how long anything takes.
@Suite("tail linger")
struct TailLingerTests {
    /// A linger sleep that records each call and returns only when the test opens it.
    final class LingerGate: Sendable {
        private struct State {
            var calls: [Duration] = []
            var waiting: [CheckedContinuation<Void, Never>] = []
        }
        private let state = Mutex(State())

        var sleep: @Sendable (Duration) async -> Void {
            { [self] duration in
                await withCheckedContinuation { continuation in
                    state.withLock {
                        $0.calls.append(duration)
                        $0.waiting.append(continuation)
                    }
                }
            }
        }

        var calls: [Duration] { state.withLock { $0.calls } }
        var sleepers: Int { state.withLock { $0.waiting.count } }

        /// Ends every sleep in progress.
        func open() {
            for continuation in state.withLock({ state in defer { state.waiting = [] }; return state.waiting }) {
                continuation.resume()
            }
        }
    }

    /// Runs a tail source with `linger` and the gate as its sleep.
    static func start(
        _ config: TailConfig, linger: Duration, gate: LingerGate, sink: some RecordSink
    ) -> Task<Void, any Error> {
        let source = TailSource(name: "linger-test", config: config, lingerSleep: gate.sleep)
        let context = SourceContext(sink: sink, logger: Logger(label: "linger-test"), linger: linger)
        return Task { try await source.run(context: context) }
    }

    @Test func linesWrittenWithinTheBudgetAreReadTogetherWhenItEnds() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        writeFile(path, "")
        let gate = LingerGate()
        let sink = CollectingSink()
        var config = tailTestConfig([path], watch: .auto, startAt: .beginning)
        config.discoveryInterval = .seconds(60)
        let tail = Self.start(config, linger: .seconds(1), gate: gate, sink: sink)
        let writer = TailTestWriter(path)

        // The first line wakes the reader, which waits out the budget before it reads again. (Had the reader not gone
        // idle yet when the line was written, it read it in its first pass and lingers after that.)
        writer.write("line 0\n")
        #expect(await eventually { gate.sleepers == 1 })
        let readBeforeLingering = sink.count
        #expect(readBeforeLingering <= 1)
        for index in 1..<50 { writer.write("line \(index)\n") }
        // The reader is held by the gate: nothing more can have been read, however slow or fast the machine is.
        #expect(sink.count == readBeforeLingering)
        gate.open()
        #expect(await eventually { sink.count == 50 })
        #expect(sink.records.map(\.tailMessage) == (0..<50).map { "line \($0)" })
        #expect(gate.calls.allSatisfy { $0 == .seconds(1) })


        tail.cancel()
        gate.open()
        try await tail.value
    }

    @Test func withoutABudgetTheReaderNeverWaits() async throws {
        let directory = try TailTemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("app.log")
        writeFile(path, "")
        let gate = LingerGate()
        let sink = CollectingSink()
        let tail = Self.start(
            tailTestConfig([path], watch: .auto, startAt: .beginning), linger: .zero, gate: gate, sink: sink)
        let writer = TailTestWriter(path)
        for index in 0..<20 {
            writer.write("line \(index)\n")
            #expect(await eventually { sink.count == index + 1 })
        }
        #expect(gate.calls.isEmpty)
        tail.cancel()
        try await tail.value
    }
}
