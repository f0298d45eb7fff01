import Testing
import UplinkCore
import UplinkTestSupport

/// Many producers and one consumer at once.
extension RecordRingTests {
    // MARK: Concurrency

    /// A frame that names its producer and index: `[producer, index (4 bytes LE), padding…]`.
    private static func producerFrame(_ producer: Int, _ index: Int) -> [UInt8] {
        var frame: [UInt8] = [UInt8(producer)]
        withUnsafeBytes(of: UInt32(index).littleEndian) { frame.append(contentsOf: $0) }
        frame.append(contentsOf: pattern(producer * 100_003 + index, count: index % 29))
        return frame
    }

    /// Reads and acknowledges until `total` frames came out, checking that sequences are contiguous from 1 and each
    /// producer's frames arrive complete and in order.
    private static func consume(_ ring: RecordRing, producers: Int, total: Int) async {
        let (wakeups, wake) = AsyncStream<Void>.makeStream()
        var iterator = wakeups.makeAsyncIterator()
        var nextSequence: UInt64 = 1
        var nextIndex = [Int](repeating: 0, count: producers)
        var received = 0
        var failures = 0
        // Cancelled (the time limit), the wake-up stream's iterator returns at once: stop rather than spin.
        while received < total && failures < 10 && !Task.isCancelled {
            var last: UInt64?
            ring.readUnsent(maxBytes: 2048) { sequence, first, second in
                let bytes = Array(first) + Array(second)
                let producer = Int(bytes[0])
                let index = bytes[1...4].reversed().reduce(0) { $0 << 8 | Int($1) }
                if sequence != nextSequence || index != nextIndex[producer] || bytes != producerFrame(producer, index) {
                    Issue.record("sequence \(sequence) (expected \(nextSequence)): producer \(producer) index \(index)")
                    failures += 1
                }
                nextSequence = sequence + 1
                nextIndex[producer] = index + 1
                received += 1
                last = sequence
            }
            if let last {
                ring.acknowledge(through: last)
            } else if ring.notifyWhenDataAvailable({ wake.yield() }) {
                await iterator.next()
            }
        }
        #expect(received == total)
        #expect(nextIndex == [Int](repeating: total / producers, count: producers))
    }

    @Test(.timeLimit(.minutes(2)))
    func concurrentProducersLoseNothing() async {
        let producers = 4
        let perProducer = 20_000
        let ring = RecordRing(capacity: 8 * 1024 * 1024)
        let ids = (0..<producers).map { ring.registerSource("p\($0)") }
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for index in 0..<perProducer {
                        let outcome = ring.append(Self.producerFrame(producer, index), source: ids[producer])
                        guard case .appended = outcome else {
                            Issue.record("producer \(producer) index \(index): \(outcome)")
                            return
                        }
                    }
                }
            }
            await Self.consume(ring, producers: producers, total: producers * perProducer)
            await group.waitForAll()
        }
        let statistics = ring.statistics()
        #expect(ring.isEmpty)
        #expect(statistics.nextToWrite == UInt64(producers * perProducer + 1))
        #expect(statistics.acknowledged == UInt64(producers * perProducer))
        for index in 0..<producers {
            #expect(statistics.source("p\(index)")?.appended == perProducer)
            #expect(statistics.source("p\(index)")?.droppedOldest == 0)
        }
    }

    /// Every append here waits for room, so every frame goes through the executor at least once: alone it takes a few
    /// seconds, inside a full run (the executor shared with every other test) 50–80 s on two cores; hence the longer
    /// limit.
    @Test(.timeLimit(.minutes(5)), arguments: OverflowPolicy.allCases)
    func concurrentWaitingProducersThroughASmallRingLoseNothing(policy: OverflowPolicy) async {
        let producers = 4
        let perProducer = 20_000
        let ring = RecordRing(capacity: 1024, policy: policy)
        let ids = (0..<producers).map { ring.registerSource("p\($0)") }
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for index in 0..<perProducer {
                        let outcome = await ring.appendWaitingForSpace(Self.producerFrame(producer, index), source: ids[producer])
                        guard case .appended = outcome else {
                            Issue.record("producer \(producer) index \(index): \(outcome)")
                            return
                        }
                    }
                }
            }
            await Self.consume(ring, producers: producers, total: producers * perProducer)
            await group.waitForAll()
        }
        let statistics = ring.statistics()
        #expect(ring.isEmpty)
        #expect(statistics.nextToWrite == UInt64(producers * perProducer + 1))
        for index in 0..<producers {
            #expect(statistics.source("p\(index)")?.appended == perProducer)
            #expect(statistics.source("p\(index)")?.droppedOldest == 0)
            #expect(statistics.source("p\(index)")?.droppedNewest == 0)
        }
    }
}

extension RecordRingTests {
    /// Producers overrun a small `drop_oldest` ring while a consumer reads and acknowledges: frames are dropped, but
    /// every frame read is intact, sequences only grow, and the counters add up.
    @Test(.timeLimit(.minutes(2)))
    func concurrentProducersOverrunningADropOldestRingNeverTearFrames() async {
        let producers = 4
        let perProducer = 20_000
        let ring = RecordRing(capacity: 2048, policy: .dropOldest)
        let ids = (0..<producers).map { ring.registerSource("p\($0)") }
        let finished = CallCounter()
        let (wakeups, wake) = AsyncStream<Void>.makeStream()
        var received = 0
        var failures = 0
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<producers {
                group.addTask {
                    for index in 0..<perProducer {
                        let outcome = ring.append(Self.producerFrame(producer, index), source: ids[producer])
                        guard case .appended = outcome else {
                            Issue.record("producer \(producer) index \(index): \(outcome)")
                            return
                        }
                        if index % 64 == 0 { await Task.yield() }
                    }
                    finished.increment()
                    wake.yield()
                }
            }
            var iterator = wakeups.makeAsyncIterator()
            var lastSequence: UInt64 = 0
            var nextIndex = [Int](repeating: 0, count: producers)
            // Cancelled (the time limit), the wake-up stream's iterator returns at once: stop rather than spin.
            while failures < 10 && !Task.isCancelled {
                var last: UInt64?
                ring.readUnsent(maxBytes: 512) { sequence, first, second in
                    let bytes = Array(first) + Array(second)
                    let producer = Int(bytes[0])
                    let index = bytes[1...4].reversed().reduce(0) { $0 << 8 | Int($1) }
                    if sequence <= lastSequence || index < nextIndex[producer] || bytes != Self.producerFrame(producer, index) {
                        Issue.record("sequence \(sequence) after \(lastSequence): producer \(producer) index \(index)")
                        failures += 1
                    }
                    lastSequence = sequence
                    nextIndex[producer] = index + 1
                    received += 1
                    last = sequence
                }
                if let last {
                    ring.acknowledge(through: last)
                    continue
                }
                if finished.value == producers && !ring.hasUnsentFrames { break }
                if ring.notifyWhenDataAvailable({ wake.yield() }) { await iterator.next() }
            }
            await group.waitForAll()
        }
        let statistics = ring.statistics()
        let total = producers * perProducer
        #expect(statistics.nextToWrite == UInt64(total + 1))
        #expect(statistics.sources.map(\.appended) == [Int](repeating: perProducer, count: producers))
        let dropped = statistics.sources.reduce(0) { $0 + $1.droppedOldest }
        // A frame can be read and then dropped before its ack, so it may count on both sides.
        #expect(received + dropped >= total)
        #expect(received <= total)
        #expect(statistics.unsentFrames == 0)
    }
}
