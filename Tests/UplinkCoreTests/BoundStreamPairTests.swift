import NIOCore
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
    case .errorOccurred(is CancellationError): "error(cancelled)"
    case .errorOccurred(let error): "error(\(error))"
    case .endEncountered: "end"
    }
}

/// A pair whose events are recorded in order.
private func recordingPair(capacity: Int) -> (BoundStreamPair, Recorder<String>) {
    let events = Recorder<String>()
    return (BoundStreamPair(capacity: capacity) { events.append(describe($0)) }, events)
}

/// A pair whose events can be awaited.
private func streamingPair(
    capacity: Int
) -> (BoundStreamPair, AsyncStream<BoundStreamEvent>, AsyncStream<BoundStreamEvent>.Continuation) {
    let (events, sink) = AsyncStream<BoundStreamEvent>.makeStream()
    let pair = BoundStreamPair(capacity: capacity) { sink.yield($0) }
    return (pair, events, sink)
}

private func write(_ pair: BoundStreamPair, _ bytes: [UInt8]) -> Int {
    bytes.withUnsafeBytes { pair.write($0) }
}

private func next(_ iterator: inout AsyncStream<BoundStreamEvent>.AsyncIterator) async -> String? {
    await iterator.next().map(describe)
}

private func bytes(of buffer: ByteBuffer?) -> [UInt8]? {
    buffer.map { Array($0.readableBytesView) }
}

/// Reads `pair` to its end in a new task and returns the chunks.
private func startReading(_ pair: BoundStreamPair) -> Task<[[UInt8]], any Error> {
    Task {
        var chunks: [[UInt8]] = []
        for try await chunk in pair.input { chunks.append(Array(chunk.readableBytesView)) }
        return chunks
    }
}

@Suite("BoundStreamPair")
struct BoundStreamPairTests {
    // MARK: Writing

    @Test func writeTakesAtMostTheCapacityAndReturnsTheCount() async throws {
        let (pair, events) = recordingPair(capacity: 10)
        let data = pattern(1, count: 30)
        #expect(pair.capacity == 10)
        #expect(pair.availableSpace == 10)
        #expect(write(pair, Array(data[0..<4])) == 4)
        #expect(pair.availableSpace == 6)
        #expect(write(pair, Array(data[4..<14])) == 6)
        #expect(pair.availableSpace == 0)
        #expect(write(pair, Array(data[10..<13])) == 0)
        #expect(write(pair, []) == 0)
        var reader = pair.input.makeAsyncIterator()
        #expect(bytes(of: try await reader.next()) == Array(data[0..<4]))
        #expect(pair.availableSpace == 4)
        #expect(bytes(of: try await reader.next()) == Array(data[4..<10]))
        #expect(pair.availableSpace == 10)
        #expect(write(pair, Array(data[10..<30])) == 10)
        #expect(bytes(of: try await reader.next()) == Array(data[10..<20]))
        // The first read answers both the opening and the short write before it: one event for that occasion.
        #expect(events.all == ["space", "space"])
        #expect(BoundStreamPair.defaultCapacity == 64 * 1024)
    }

    @Test func writeCopiesTheBytes() async throws {
        let (pair, _) = recordingPair(capacity: 16)
        var data = pattern(2, count: 8)
        #expect(write(pair, data) == 8)
        data[0] ^= 0xFF
        var reader = pair.input.makeAsyncIterator()
        #expect(bytes(of: try await reader.next()) == pattern(2, count: 8))
    }

    @Test func writeFromAByteBufferMovesItsReaderIndexAndKeepsValueSemantics() async throws {
        let (pair, _) = recordingPair(capacity: 8)
        let data = pattern(3, count: 20)
        var buffer = ByteBuffer(bytes: data)
        #expect(pair.write(&buffer) == 8)
        #expect(buffer.readerIndex == 8)
        #expect(buffer.readableBytes == 12)
        #expect(Array(buffer.readableBytesView) == Array(data[8...]))

        // Changing the caller's buffer afterwards, even the bytes it handed over, does not reach the pair.
        buffer.setBytes([UInt8](repeating: 0xEE, count: 20), at: 0)
        buffer.moveReaderIndex(to: 8)
        buffer.writeBytes([1, 2, 3])
        var reader = pair.input.makeAsyncIterator()
        #expect(bytes(of: try await reader.next()) == Array(data[0..<8]))

        // The rest of the buffer (as changed) goes next.
        #expect(pair.write(&buffer) == 8)
        #expect(buffer.readableBytes == 7)
        #expect(bytes(of: try await reader.next()) == [UInt8](repeating: 0xEE, count: 8))

        var empty = ByteBuffer()
        #expect(pair.write(&empty) == 0)
        #expect(empty.readerIndex == 0)
    }

    @Test func writingAByteBufferThatFitsLeavesItEmpty() async throws {
        let (pair, _) = recordingPair(capacity: 64)
        var buffer = ByteBuffer(bytes: pattern(4, count: 10))
        #expect(pair.write(&buffer) == 10)
        #expect(buffer.readableBytes == 0)
        var reader = pair.input.makeAsyncIterator()
        #expect(bytes(of: try await reader.next()) == pattern(4, count: 10))
    }

    // MARK: hasSpaceAvailable

    @Test func spaceEventsFollowTheDocumentedRule() async throws {
        let (pair, events) = recordingPair(capacity: 8)
        var reader = pair.input.makeAsyncIterator()
        func read() async throws -> Int? { try await reader.next()?.readableBytes }

        #expect(write(pair, pattern(0, count: 5)) == 5)
        #expect(events.count == 0, "nothing before the reader opens the stream")
        #expect(try await read() == 5)
        #expect(events.count == 1, "the first read raises one")

        // Writes that take everything without filling the pair: nothing is owed.
        #expect(write(pair, pattern(1, count: 3)) == 3)
        #expect(write(pair, pattern(2, count: 3)) == 3)
        #expect(try await read() == 3)
        #expect(try await read() == 3)
        #expect(events.count == 1)

        // A short write: exactly one event, on the next read.
        #expect(write(pair, pattern(3, count: 10)) == 8)
        #expect(events.count == 1)
        #expect(try await read() == 8)
        #expect(events.count == 2)
        #expect(write(pair, pattern(4, count: 2)) == 2)
        #expect(write(pair, pattern(5, count: 2)) == 2)
        #expect(try await read() == 2)
        #expect(try await read() == 2)
        #expect(events.count == 2)

        // A write that fills the pair exactly: one event.
        #expect(write(pair, pattern(6, count: 8)) == 8)
        #expect(try await read() == 8)
        #expect(events.count == 3)

        // Turned away several times before a read: still one event.
        #expect(write(pair, pattern(7, count: 8)) == 8)
        #expect(write(pair, pattern(8, count: 1)) == 0)
        #expect(write(pair, pattern(9, count: 5)) == 0)
        #expect(try await read() == 8)
        #expect(events.count == 4)

        // One event per occasion even when several reads free space.
        #expect(write(pair, pattern(10, count: 4)) == 4)
        #expect(write(pair, pattern(11, count: 4)) == 4)
        #expect(try await read() == 4)
        #expect(events.count == 5)
        #expect(try await read() == 4)
        #expect(events.count == 5)

        // A partly taken write.
        #expect(write(pair, pattern(12, count: 6)) == 6)
        #expect(write(pair, pattern(13, count: 6)) == 2)
        #expect(try await read() == 6)
        #expect(events.count == 6)
        #expect(write(pair, pattern(14, count: 3)) == 3)
        #expect(try await read() == 2)
        #expect(try await read() == 3)
        #expect(events.count == 6)

        // A read that frees less than half the capacity owes nothing yet: the writer would only fill those few
        // bytes, and the stream would go on in chunks that small.
        #expect(write(pair, pattern(15, count: 1)) == 1)
        #expect(write(pair, pattern(16, count: 9)) == 7)
        #expect(try await read() == 1)
        #expect(events.count == 6, "1 of 8 bytes free")
        #expect(try await read() == 7)
        #expect(events.count == 7)
        #expect(write(pair, pattern(17, count: 3)) == 3)
        #expect(write(pair, pattern(18, count: 6)) == 5)
        #expect(try await read() == 3)
        #expect(events.count == 7, "3 of 8 bytes free")
        #expect(try await read() == 5)
        #expect(events.count == 8, "all 8 free")
        #expect(events.all == [String](repeating: "space", count: 8))
    }

    @Test func halfTheCapacityFreedRaisesTheOwedEvent() async throws {
        let (pair, events) = recordingPair(capacity: 9)
        var reader = pair.input.makeAsyncIterator()
        #expect(write(pair, [1]) == 1)
        #expect(try await reader.next()?.readableBytes == 1)
        #expect(events.count == 1, "the first read opens the stream")
        for size in [4, 1, 4] { #expect(write(pair, pattern(size, count: size)) == size) }
        #expect(write(pair, [0]) == 0)
        #expect(try await reader.next()?.readableBytes == 4)
        #expect(events.count == 1, "4 of 9 free: less than half")
        #expect(try await reader.next()?.readableBytes == 1)
        #expect(events.count == 2, "5 of 9 free")
    }

    @Test func theFirstReadOfAParkedReaderRaisesExactlyOneEvent() async throws {
        let (pair, eventsStream, sink) = streamingPair(capacity: 8)
        var events = eventsStream.makeAsyncIterator()
        let reader = startReading(pair)
        #expect(await next(&events) == "space")
        #expect(write(pair, [1, 2, 3]) == 3)
        #expect(write(pair, [4]) == 1)
        pair.close()
        let chunks = try await reader.value
        #expect(chunks.flatMap { $0 } == [1, 2, 3, 4])
        sink.finish()
        #expect(await next(&events) == nil, "no further event")
    }

    @Test func aShortWriteHandedToAParkedReaderIsFollowedByOneEvent() async throws {
        let (pair, eventsStream, sink) = streamingPair(capacity: 8)
        var events = eventsStream.makeAsyncIterator()
        let data = pattern(5, count: 20)
        let reader = startReading(pair)
        #expect(await next(&events) == "space")
        // The reader is parked: the bytes go straight to it, but the writer was turned away.
        #expect(write(pair, data) == 8)
        #expect(await next(&events) == "space")
        #expect(write(pair, Array(data[8...])) == 8)
        #expect(await next(&events) == "space")
        #expect(write(pair, Array(data[16...])) == 4)
        pair.close()
        let chunks = try await reader.value
        #expect(chunks.flatMap { $0 } == data)
        #expect(chunks.allSatisfy { $0.count <= 8 })
        sink.finish()
        #expect(await next(&events) == nil)
    }

    /// What the writer in `aMebibyteThroughAKibibytePair` saw.
    private struct WriterTally: Sendable {
        var spaceEvents = 0
        /// Writes that did not take everything, or filled the pair (seen as no space left right after).
        var turnedAway = 0
        /// Writes that took everything offered while the pair had room left.
        var fullWrites = 0
        /// Space events that came while the writer was not waiting for one.
        var unattributed = 0
        var otherEvents: [String] = []
    }

    /// Writes `data` into `pair` only in response to `hasSpaceAvailable`, with writes of varying sizes, until turned
    /// away; closes the pair at the end.
    private static func drive(
        _ pair: BoundStreamPair, events: AsyncStream<BoundStreamEvent>, data: [UInt8], sizes: [Int]
    ) async -> WriterTally {
        var tally = WriterTally()
        var offset = 0
        var writes = 0
        var waiting = true  // for the first event
        for await event in events {
            guard case .hasSpaceAvailable = event else {
                tally.otherEvents.append(describe(event))
                continue
            }
            tally.spaceEvents += 1
            if !waiting || offset == data.count {
                tally.unattributed += 1
                continue
            }
            waiting = false
            while offset < data.count {
                let size = min(sizes[writes % sizes.count], data.count - offset)
                writes += 1
                let taken = data.withUnsafeBytes { pair.write(UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + size)])) }
                #expect(taken <= size)
                offset += taken
                if offset == data.count { break }
                if taken < size || pair.availableSpace == 0 {
                    tally.turnedAway += 1
                    waiting = true
                    break
                }
                tally.fullWrites += 1
            }
            if offset == data.count { pair.close() }
        }
        return tally
    }

    @Test(.timeLimit(.minutes(2)), arguments: [
        ([1, 2, 3, 7, 64, 100, 333, 1000, 1024, 1025, 4096], 1 << 20),
        ([1024], 1 << 20),
        ([4096, 5000], 1 << 20),
        ([17, 511, 513], 1 << 20),
        ([1], 1 << 16),  // one chunk per byte: a smaller total keeps the test quick
    ])
    func aMebibyteThroughAKibibytePairArrivesInOrder(writeSizes: [Int], total: Int) async throws {
        let data = pattern(42, count: total)
        let (events, sink) = AsyncStream<BoundStreamEvent>.makeStream()
        let pair = BoundStreamPair(capacity: 1024) { sink.yield($0) }
        async let tally = Self.drive(pair, events: events, data: data, sizes: writeSizes)

        var received: [UInt8] = []
        received.reserveCapacity(total)
        var chunks = 0
        for try await chunk in pair.input {
            #expect(chunk.readableBytes > 0 && chunk.readableBytes <= 1024)
            received.append(contentsOf: chunk.readableBytesView)
            chunks += 1
            if chunks % 7 == 0 { await Task.yield() }
        }
        sink.finish()
        let result = await tally
        #expect(received.count == total)
        #expect(received == data)
        #expect(result.otherEvents.isEmpty)
        #expect(result.turnedAway > 0)
        // Every time the writer was turned away an event came (or the test would not end), and no occasion was
        // answered twice. A write that takes everything and happens to fill the pair is an occasion too, but when a
        // read frees space before the writer looks, the writer cannot tell: such events arrive unattributed. There can
        // be at most one per write that took everything.
        #expect(result.spaceEvents == 1 + result.turnedAway + result.unattributed)
        #expect(result.unattributed <= result.fullWrites)
    }

    // MARK: Ending the stream

    @Test func closeDeliversTheRemainingBytesThenTheEnd() async throws {
        let (pair, events) = recordingPair(capacity: 8)
        #expect(write(pair, [1, 2, 3]) == 3)
        #expect(write(pair, [4, 5]) == 2)
        pair.close()
        #expect(pair.availableSpace == 0)
        #expect(write(pair, [6]) == 0)
        pair.close()
        var reader = pair.input.makeAsyncIterator()
        #expect(bytes(of: try await reader.next()) == [1, 2, 3])
        #expect(bytes(of: try await reader.next()) == [4, 5])
        #expect(try await reader.next() == nil)
        #expect(try await reader.next() == nil)
        #expect(events.all.isEmpty, "a closed pair owes its writer nothing")
    }

    @Test func closeEndsAParkedReader() async throws {
        let (pair, eventsStream, sink) = streamingPair(capacity: 8)
        var events = eventsStream.makeAsyncIterator()
        let reader = startReading(pair)
        #expect(await next(&events) == "space")
        pair.close()
        #expect(try await reader.value.isEmpty)
        sink.finish()
        #expect(await next(&events) == nil)
    }

    @Test func failMakesTheReaderThrowAndDiscardsBufferedBytes() async throws {
        let (pair, events) = recordingPair(capacity: 8)
        #expect(write(pair, [1, 2, 3]) == 3)
        pair.fail(PairTestError(code: 1))
        #expect(write(pair, [4]) == 0)
        #expect(pair.availableSpace == 0)
        pair.fail(PairTestError(code: 2))  // ignored: already failed
        pair.close()  // ignored
        var reader = pair.input.makeAsyncIterator()
        await #expect(throws: PairTestError(code: 1)) { try await reader.next() }
        #expect(try await reader.next() == nil)
        #expect(events.all.isEmpty)
    }

    @Test func failWakesAParkedReaderWithTheError() async throws {
        let (pair, eventsStream, sink) = streamingPair(capacity: 8)
        var events = eventsStream.makeAsyncIterator()
        let reader = startReading(pair)
        #expect(await next(&events) == "space")
        pair.fail(PairTestError(code: 3))
        await #expect(throws: PairTestError(code: 3)) { try await reader.value }
        sink.finish()
        #expect(await next(&events) == nil, "the writer failed the pair itself: no event")
    }

    @Test func failingWithCancellationErrorIsNotEchoedToTheWriter() async throws {
        let (pair, events) = recordingPair(capacity: 8)
        pair.fail(CancellationError())
        var reader = pair.input.makeAsyncIterator()
        await #expect(throws: CancellationError.self) { try await reader.next() }
        #expect(events.all.isEmpty)
    }

    @Test func failAfterCloseIsIgnored() async throws {
        let (pair, _) = recordingPair(capacity: 8)
        #expect(write(pair, [1]) == 1)
        pair.close()
        pair.fail(PairTestError(code: 4))
        var reader = pair.input.makeAsyncIterator()
        #expect(bytes(of: try await reader.next()) == [1])
        #expect(try await reader.next() == nil)
    }

    @Test func finishInputTellsTheWriterOnceAndLaterWritesTakeNothing() async throws {
        let (pair, events) = recordingPair(capacity: 8)
        #expect(write(pair, [1, 2, 3]) == 3)
        pair.finishInput()
        #expect(events.all == ["end"])
        #expect(write(pair, [4]) == 0)
        #expect(pair.availableSpace == 0)
        var reader = pair.input.makeAsyncIterator()
        #expect(try await reader.next() == nil, "buffered bytes are discarded")
        pair.finishInput()
        pair.finishInput(error: PairTestError(code: 5))
        pair.close()
        #expect(events.all == ["end"])
    }

    @Test func finishingTheInputWithAnErrorReportsIt() async throws {
        let (pair, events) = recordingPair(capacity: 8)
        pair.input.finish(error: PairTestError(code: 6))
        #expect(events.all == ["error(6)"])
        #expect(write(pair, [1]) == 0)
    }

    @Test func finishInputEndsAParkedReader() async throws {
        let (pair, eventsStream, sink) = streamingPair(capacity: 8)
        var events = eventsStream.makeAsyncIterator()
        let reader = startReading(pair)
        #expect(await next(&events) == "space")
        pair.input.finish()
        #expect(try await reader.value.isEmpty)
        #expect(await next(&events) == "end")
        sink.finish()
        #expect(await next(&events) == nil)

        let (other, otherEventsStream, otherSink) = streamingPair(capacity: 8)
        var otherEvents = otherEventsStream.makeAsyncIterator()
        let otherReader = startReading(other)
        #expect(await next(&otherEvents) == "space")
        other.finishInput(error: PairTestError(code: 7))
        await #expect(throws: PairTestError(code: 7)) { try await otherReader.value }
        #expect(await next(&otherEvents) == "error(7)")
        otherSink.finish()
    }

    // MARK: Cancellation

    @Test func cancellingAParkedReaderTellsTheWriter() async throws {
        let (pair, eventsStream, sink) = streamingPair(capacity: 8)
        var events = eventsStream.makeAsyncIterator()
        let reader = startReading(pair)
        #expect(await next(&events) == "space")
        reader.cancel()
        await #expect(throws: CancellationError.self) { try await reader.value }
        #expect(await next(&events) == "error(cancelled)")
        #expect(write(pair, [1]) == 0)
        #expect(pair.availableSpace == 0)
        pair.finishInput()
        pair.close()
        sink.finish()
        #expect(await next(&events) == nil, "exactly one event")
    }

    @Test func readingInACancelledTaskThrowsAndTellsTheWriter() async throws {
        let (pair, events) = recordingPair(capacity: 8)
        let reader = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var iterator = pair.input.makeAsyncIterator()
            return try await iterator.next()
        }
        await #expect(throws: CancellationError.self) { try await reader.value }
        #expect(events.all == ["error(cancelled)"])
        #expect(write(pair, [1]) == 0)
    }

    @Test func readingInACancelledTaskDiscardsBufferedBytes() async throws {
        let (pair, events) = recordingPair(capacity: 8)
        #expect(write(pair, [1, 2]) == 2)
        let reader = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            var iterator = pair.input.makeAsyncIterator()
            return try await iterator.next()
        }
        await #expect(throws: CancellationError.self) { try await reader.value }
        #expect(events.all == ["error(cancelled)"])
        #expect(write(pair, [1]) == 0)
        var iterator = pair.input.makeAsyncIterator()
        #expect(try await iterator.next() == nil)
    }

    @Test(.timeLimit(.minutes(2)))
    func aCancelledReaderAlwaysThrowsAndTellsTheWriterOnce() async {
        // Cancel a busy reader at varying points; the writer never closes, so the only way out is the error.
        for round in 0..<300 {
            let (pair, events) = recordingPair(capacity: 16)
            let reader = startReading(pair)
            for step in 0..<(round % 13) {
                _ = write(pair, pattern(step, count: 1 + step % 20))
                if step % 3 == 0 { await Task.yield() }
            }
            reader.cancel()
            let result = await reader.result
            guard case .failure(let error) = result, error is CancellationError else {
                Issue.record("round \(round): \(result)")
                continue
            }
            #expect(events.all.filter { $0 != "space" } == ["error(cancelled)"], "round \(round)")
            #expect(write(pair, [1]) == 0, "round \(round)")
        }
    }
}
