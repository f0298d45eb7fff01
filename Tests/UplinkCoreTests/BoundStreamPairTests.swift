import NIOCore
import NIOEmbedded
import Testing
import UplinkCore

private struct PairTestError: Error, Equatable {
    let code: Int
}

/// A comparable summary of an event.
private func describe(_ event: BoundStreamEvent) -> String {
    switch event {
    case .hasSpaceAvailable: "space"
    case .errorOccurred(let error as PairTestError): "error(\(error.code))"
    case .errorOccurred(let error): "error(\(error))"
    case .endEncountered: "end"
    }
}

/// A transport stand-in: records what it is handed and answers `send` as told.
private final class TestSink: BoundStreamSink {
    /// What `send` returns.
    var wantsMore = true
    /// Reports each chunk sent from inside `send`, as a transport whose socket takes it at once.
    var sendsAtOnce = false
    weak var pair: BoundStreamPair?
    private(set) var chunks: [[UInt8]] = []
    private(set) var finished: [String] = []

    var bytes: [UInt8] { chunks.flatMap { $0 } }

    func send(_ chunk: ByteBuffer) -> Bool {
        chunks.append(Array(chunk.readableBytesView))
        if sendsAtOnce { pair?.sinkSent(chunk.readableBytes) }
        return wantsMore
    }

    func finish(error: (any Error)?) {
        finished.append(error.map { describe(.errorOccurred($0)) } ?? "clean")
    }
}

/// A pair on an embedded loop whose events are recorded in order once the loop runs.
private final class Harness {
    let loop = EmbeddedEventLoop()
    let sink = TestSink()
    private(set) var events: [String] = []
    private(set) var pair: BoundStreamPair!

    init(capacity: Int) {
        pair = BoundStreamPair(capacity: capacity, loop: loop) { [unowned self] in events.append(describe($0)) }
        sink.pair = pair
    }

    /// Runs the loop's queued work and returns the events raised since the last call.
    func drainEvents() -> [String] {
        loop.run()
        defer { events.removeAll() }
        return events
    }

    func write(_ bytes: [UInt8]) -> Int {
        bytes.withUnsafeBytes { pair.write($0) }
    }

    func writeBuffer(_ bytes: [UInt8]) -> (taken: Int, left: Int) {
        var buffer = ByteBuffer(bytes: bytes)
        let taken = pair.write(&buffer)
        return (taken, buffer.readableBytes)
    }
}

@Suite("BoundStreamPair")
struct BoundStreamPairTests {
    // MARK: Writing

    @Test func writeTakesAtMostTheFreeRoomAndReturnsTheCount() {
        let harness = Harness(capacity: 10)
        let data = pattern(1, count: 30)
        #expect(harness.pair.capacity == 10)
        #expect(harness.pair.availableSpace == 10)
        #expect(harness.write(Array(data[0..<4])) == 4)
        #expect(harness.pair.availableSpace == 6)
        #expect(harness.write(Array(data[4..<14])) == 6)
        #expect(harness.pair.availableSpace == 0)
        #expect(harness.pair.bufferedBytes == 10)
        #expect(harness.write(Array(data[10..<13])) == 0)
        #expect(harness.write([]) == 0)
        // Nothing is raised before the input side opens.
        #expect(harness.drainEvents() == [])
        #expect(BoundStreamPair.defaultCapacity == 64 * 1024)
    }

    @Test func writingABufferMovesItsReaderIndexPastWhatWasTaken() {
        let harness = Harness(capacity: 8)
        let data = pattern(2, count: 12)
        let first = harness.writeBuffer(data)
        #expect(first.taken == 8 && first.left == 4)
        harness.pair.bind(harness.sink)
        #expect(harness.sink.bytes == Array(data[0..<8]))
        harness.pair.sinkSent(8)
        #expect(harness.write(Array(data[8...])) == 4)
        #expect(harness.sink.bytes == data)
    }

    // MARK: Space events

    @Test func bindingTheSinkRaisesTheFirstSpaceEventAndPushesWhatWaits() {
        let harness = Harness(capacity: 10)
        let data = pattern(3, count: 6)
        #expect(harness.write(data) == 6)
        harness.pair.bind(harness.sink)
        #expect(harness.sink.bytes == data)
        // Handed over but not sent: still counted against the capacity, so the opening's event waits for half.
        #expect(harness.pair.availableSpace == 4)
        #expect(harness.drainEvents() == [])
        harness.pair.sinkSent(6)
        #expect(harness.pair.availableSpace == 10)
        #expect(harness.drainEvents() == ["space"])
        harness.pair.sinkSent(1)
        // The writer was not turned away since: nothing is owed.
        #expect(harness.drainEvents() == [])
    }

    @Test func aTurnedAwayWriterHearsOnceWhenHalfTheCapacityIsFree() {
        let harness = Harness(capacity: 10)
        harness.pair.bind(harness.sink)
        #expect(harness.drainEvents() == ["space"])
        #expect(harness.write(pattern(4, count: 12)) == 10)
        harness.pair.sinkSent(4)
        // 4 free of 10: less than half, the writer would refill the few bytes a send freed.
        #expect(harness.drainEvents() == [])
        harness.pair.sinkSent(1)
        #expect(harness.drainEvents() == ["space"])
        harness.pair.sinkSent(5)
        #expect(harness.drainEvents() == [])
    }

    @Test func aWriteThatFillsThePairExactlyIsOwedASpaceEvent() {
        let harness = Harness(capacity: 10)
        harness.pair.bind(harness.sink)
        _ = harness.drainEvents()
        #expect(harness.write(pattern(5, count: 10)) == 10)
        harness.pair.sinkSent(10)
        #expect(harness.drainEvents() == ["space"])
    }

    @Test func eachTimeTheWriterIsTurnedAwayItIsOwedOneEvent() {
        let harness = Harness(capacity: 10)
        harness.pair.bind(harness.sink)
        _ = harness.drainEvents()
        #expect(harness.write(pattern(6, count: 20)) == 10)
        harness.pair.sinkSent(10)
        // Turned away twice more before the loop ran: still one event for the writer to act on.
        #expect(harness.write(pattern(7, count: 20)) == 10)
        harness.pair.sinkSent(10)
        #expect(harness.drainEvents() == ["space", "space"])
    }

    @Test func eventsAreDeliveredInALaterLoopTurnNeverFromInsideAWrite() {
        let harness = Harness(capacity: 10)
        harness.pair.bind(harness.sink)
        #expect(harness.events == [])
        #expect(harness.drainEvents() == ["space"])
        #expect(harness.write(pattern(8, count: 10)) == 10)
        harness.pair.sinkSent(10)
        // Owed and due, but raised only when the loop runs.
        #expect(harness.events == [])
        #expect(harness.drainEvents() == ["space"])
    }

    @Test func aSinkThatSendsAtOnceTakesAWriteLargerThanTheCapacity() {
        let harness = Harness(capacity: 10)
        harness.sink.sendsAtOnce = true
        harness.pair.bind(harness.sink)
        _ = harness.drainEvents()
        let data = pattern(9, count: 35)
        let result = harness.writeBuffer(data)
        #expect(result.taken == 35 && result.left == 0)
        #expect(harness.sink.chunks.map(\.count) == [10, 10, 10, 5])
        #expect(harness.sink.bytes == data)
        #expect(harness.drainEvents() == [])
    }

    @Test func aPausedSinkGetsNothingUntilItIsWritableAgain() {
        let harness = Harness(capacity: 10)
        harness.sink.wantsMore = false
        harness.pair.bind(harness.sink)
        #expect(harness.write([1, 2, 3]) == 3)
        #expect(harness.write([4, 5]) == 2)
        // The first chunk was taken (and paused the sink); the second waits in the pair.
        #expect(harness.sink.chunks == [[1, 2, 3]])
        #expect(harness.pair.bufferedBytes == 5)
        harness.sink.wantsMore = true
        harness.pair.sinkWritable()
        #expect(harness.sink.chunks == [[1, 2, 3], [4, 5]])
        harness.pair.sinkSent(5)
        #expect(harness.pair.bufferedBytes == 0)
    }

    // MARK: Ending

    @Test func closingHandsTheWaitingChunksOverThenEndsTheSink() {
        let harness = Harness(capacity: 10)
        harness.sink.wantsMore = false
        harness.pair.bind(harness.sink)
        _ = harness.write([1, 2])
        _ = harness.write([3])
        harness.pair.close()
        #expect(harness.write([4]) == 0)
        #expect(harness.pair.availableSpace == 0)
        // The sink is paused with a chunk waiting: the end comes after it.
        #expect(harness.sink.finished == [])
        harness.sink.wantsMore = true
        harness.pair.sinkWritable()
        #expect(harness.sink.chunks == [[1, 2], [3]])
        #expect(harness.sink.finished == ["clean"])
        harness.pair.close()
        #expect(harness.sink.finished == ["clean"])
    }

    @Test func failingDiscardsTheWaitingChunksAndFailsTheSink() {
        let harness = Harness(capacity: 10)
        harness.sink.wantsMore = false
        harness.pair.bind(harness.sink)
        _ = harness.write([1, 2])
        _ = harness.write([3])
        harness.pair.fail(PairTestError(code: 7))
        #expect(harness.sink.chunks == [[1, 2]])
        #expect(harness.sink.finished == ["error(7)"])
        #expect(harness.write([4]) == 0)
        harness.pair.sinkWritable()
        #expect(harness.sink.chunks == [[1, 2]])
        harness.pair.close()
        #expect(harness.sink.finished == ["error(7)"])
    }

    @Test func theInputSideEndingReachesTheWriterOnce() {
        let harness = Harness(capacity: 10)
        harness.pair.bind(harness.sink)
        _ = harness.write([1, 2, 3])
        harness.pair.finishInput()
        #expect(harness.pair.availableSpace == 0)
        #expect(harness.pair.bufferedBytes == 0)
        #expect(harness.write([4]) == 0)
        harness.pair.finishInput(error: PairTestError(code: 1))
        // The space event of the opening was already queued; the end follows it, and nothing after the end.
        #expect(harness.drainEvents() == ["space", "end"])
        harness.pair.sinkSent(3)
        #expect(harness.drainEvents() == [])
    }

    @Test func theInputSideFailingReachesTheWriterAsAnError() {
        let harness = Harness(capacity: 10)
        harness.pair.bind(harness.sink)
        _ = harness.drainEvents()
        _ = harness.write(pattern(10, count: 10))
        harness.pair.finishInput(error: PairTestError(code: 2))
        #expect(harness.drainEvents() == ["error(2)"])
        #expect(harness.write([1]) == 0)
    }

    @Test func bindingToAnEndedPairFinishesTheSinkAtOnce() {
        let failed = Harness(capacity: 10)
        failed.pair.fail(PairTestError(code: 3))
        failed.pair.bind(failed.sink)
        #expect(failed.sink.finished == ["error(3)"])
        #expect(failed.drainEvents() == [])

        let ended = Harness(capacity: 10)
        ended.pair.finishInput()
        ended.pair.bind(ended.sink)
        #expect(ended.sink.finished == ["clean"])
        #expect(ended.drainEvents() == ["end"])

        let closed = Harness(capacity: 10)
        _ = closed.write([9, 8])
        closed.pair.close()
        closed.pair.bind(closed.sink)
        #expect(closed.sink.chunks == [[9, 8]])
        #expect(closed.sink.finished == ["clean"])
    }
}
